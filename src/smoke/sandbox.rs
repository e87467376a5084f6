//! Leaving no trace: the run's temporary folder (`{smoke_dir}`: the agent's home, config
//! files, the session's workspace) and a network namespace with only loopback.

use std::path::{Path, PathBuf};

/// The file every workspace holds, for a scripted tool call to read.
pub const SEED_FILE: &str = "notes.txt";

/// `{smoke_dir}`: created for one run, removed afterwards unless kept.
#[derive(Debug)]
pub struct SmokeDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    /// The token in the seed file (a tool result carrying it proves the tool ran).
    pub token: String,
}

impl SmokeDir {
    /// Creates the folder with `home/`, `workspace/` (holding the seed file) and `pycache/`.
    pub fn create() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("acp-patch-smoke-")
            .tempdir()?;
        // canonical, so placeholders and the session's cwd agree with what the agent sees
        let path = std::fs::canonicalize(dir.path())?;
        for sub in ["home", "workspace", "pycache"] {
            std::fs::create_dir_all(path.join(sub))?;
        }
        let token = format!(
            "acp-smoke-{:x}{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        std::fs::write(
            path.join("workspace").join(SEED_FILE),
            format!(
                "A file acp-patch smoke put in the workspace for a scripted tool call to read.\nToken: {token}\n"
            ),
        )?;
        Ok(Self {
            dir: Some(dir),
            path,
            token,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn workspace(&self) -> PathBuf {
        self.path.join("workspace")
    }
    pub fn home(&self) -> PathBuf {
        self.path.join("home")
    }

    /// Ends every process still running in the folder (its working directory inside it) once
    /// the agent's process group is gone, and names them: a daemon the agent started in a
    /// session of its own (crow-ai 0.2.3's OpenHands runs a `tmux` server in the workspace)
    /// outlives the group and would run on after the run. Linux only (read from `/proc`).
    pub fn end_strays(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let me = std::process::id();
        let mut ended = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let inside = std::fs::read_link(entry.path().join("cwd"))
                .is_ok_and(|cwd| cwd.starts_with(&self.path));
            if pid == me || !inside {
                continue;
            }
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid as i32, libc::SIGKILL) } == 0 {
                ended.push(format!("{} (pid {pid})", name.trim()));
            }
        }
        ended
    }

    /// Removes the folder, or keeps it (and says where) when `keep`.
    pub fn finish(mut self, keep: bool) -> Option<PathBuf> {
        let dir = self.dir.take()?;
        if keep {
            Some(dir.keep())
        } else {
            let _ = dir.close();
            None
        }
    }
}

/// The environment that moves the agent's home into the smoke folder and keeps Python from
/// writing byte code. Python still reads the byte code an install left (as the agent's user
/// starts it); a cache prefix would make every module compile from source on every run and
/// delay the card by the agent's cold start. Toolchains found through the real home (rustup,
/// cargo, pyenv) keep working.
pub fn home_env(smoke: &SmokeDir, isolate_home: bool) -> Vec<(String, String)> {
    let mut env = vec![("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string())];
    if !isolate_home {
        return env;
    }
    let home = smoke.home();
    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    env.push(("HOME".into(), home.display().to_string()));
    for (var, sub) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ] {
        env.push((var.into(), home.join(sub).display().to_string()));
    }
    if let Some(real) = real_home {
        for (var, sub) in [
            ("RUSTUP_HOME", ".rustup"),
            ("CARGO_HOME", ".cargo"),
            ("PYENV_ROOT", ".pyenv"),
        ] {
            if std::env::var_os(var).is_none() && real.join(sub).is_dir() {
                env.push((var.into(), real.join(sub).display().to_string()));
            }
        }
    }
    env
}

/// Moves the calling thread into a new network namespace whose loopback is up. Threads and
/// processes it starts afterwards inherit it: the scripted LLM and the agent then share a
/// loopback and nothing else. Needs root (or CAP_SYS_ADMIN); the error says why not.
pub fn enter_loopback_namespace() -> Result<(), String> {
    // SAFETY: unshare has no memory-safety preconditions; it affects this thread only.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "unshare(CLONE_NEWNET): {}",
            std::io::Error::last_os_error()
        ));
    }
    loopback_up()
}

fn loopback_up() -> Result<(), String> {
    // SAFETY: a plain socket, an ifreq filled with a NUL-terminated name, and two ioctls on it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(format!("socket: {}", std::io::Error::last_os_error()));
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let r = if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            Err(format!(
                "SIOCGIFFLAGS lo: {}",
                std::io::Error::last_os_error()
            ))
        } else {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) < 0 {
                Err(format!(
                    "SIOCSIFFLAGS lo: {}",
                    std::io::Error::last_os_error()
                ))
            } else {
                Ok(())
            }
        };
        libc::close(fd);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke_dir_is_laid_out_and_removed() {
        let d = SmokeDir::create().unwrap();
        let p = d.path().to_path_buf();
        assert!(p.join("home").is_dir());
        let seed = std::fs::read_to_string(d.workspace().join(SEED_FILE)).unwrap();
        assert!(seed.contains(&d.token));
        let env = home_env(&d, true);
        assert!(
            env.iter()
                .any(|(k, v)| k == "HOME" && Path::new(v) == d.home())
        );
        assert!(
            env.iter()
                .any(|(k, v)| k == "PYTHONDONTWRITEBYTECODE" && v == "1")
        );
        assert_eq!(home_env(&d, false).len(), 1);
        assert!(d.finish(false).is_none());
        assert!(!p.exists());
        let d = SmokeDir::create().unwrap();
        let kept = d.finish(true).unwrap();
        assert!(kept.join("workspace").is_dir());
        std::fs::remove_dir_all(kept).unwrap();
    }

    #[test]
    fn a_process_left_in_the_folder_in_a_session_of_its_own_is_ended() {
        use std::os::unix::process::CommandExt;
        let d = SmokeDir::create().unwrap();
        // a daemon of the agent's: its own session, so no process group kill reaches it
        let mut daemon = std::process::Command::new("sleep");
        daemon.arg("60").current_dir(d.workspace());
        // SAFETY: setsid is async-signal-safe and touches no memory of ours.
        unsafe {
            daemon.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut daemon = daemon.spawn().unwrap();
        let elsewhere = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let ended = d.end_strays();
        assert_eq!(ended, [format!("sleep (pid {})", daemon.id())]);
        let status = daemon.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        let mut elsewhere = elsewhere;
        assert!(
            elsewhere.try_wait().unwrap().is_none(),
            "a process outside it is left alone"
        );
        elsewhere.kill().unwrap();
        elsewhere.wait().unwrap();
        assert!(d.end_strays().is_empty());
        d.finish(false);
    }
}
