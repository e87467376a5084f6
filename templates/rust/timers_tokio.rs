static ACP_RUNTIME: std::sync::OnceLock<tokio::runtime::Handle> = std::sync::OnceLock::new();

/// Remembers the agent's tokio runtime, so timers armed from other threads run on it.
fn acp_runtime_seen() {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let _ = ACP_RUNTIME.set(handle);
    }
}

fn acp_runtime() -> Option<tokio::runtime::Handle> {
    tokio::runtime::Handle::try_current()
        .ok()
        .or_else(|| ACP_RUNTIME.get().cloned())
}

/// A timer; stopped when its card or turn ends.
pub enum AcpTimer {
    Task(tokio::task::JoinHandle<()>),
    Thread(std::sync::Arc<std::sync::atomic::AtomicBool>),
}

impl AcpTimer {
    fn stop(self) {
        match self {
            AcpTimer::Task(task) => task.abort(),
            AcpTimer::Thread(stopped) => stopped.store(true, std::sync::atomic::Ordering::SeqCst),
        }
    }
}

fn acp_spawn_after(after: Duration, f: impl FnOnce() + Send + 'static) -> AcpTimer {
    match acp_runtime() {
        Some(runtime) => AcpTimer::Task(runtime.spawn(async move {
            tokio::time::sleep(after).await;
            f();
        })),
        None => {
            let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = stopped.clone();
            std::thread::spawn(move || {
                std::thread::sleep(after);
                if !flag.load(std::sync::atomic::Ordering::SeqCst) {
                    f();
                }
            });
            AcpTimer::Thread(stopped)
        }
    }
}

fn acp_spawn_interval(
    every: Duration,
    mut tick: impl FnMut() -> bool + Send + 'static,
) -> AcpTimer {
    match acp_runtime() {
        Some(runtime) => AcpTimer::Task(runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await; // the first tick is immediate
            loop {
                ticks.tick().await;
                if !tick() {
                    return;
                }
            }
        })),
        None => {
            let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = stopped.clone();
            std::thread::spawn(move || {
                std::thread::sleep(every);
                while !flag.load(std::sync::atomic::Ordering::SeqCst) && tick() {
                    std::thread::sleep(every);
                }
            });
            AcpTimer::Thread(stopped)
        }
    }
}

