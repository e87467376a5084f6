
// ---- Timers on threads of their own (the agent runs no tokio runtime).

fn acp_runtime_seen() {}

/// A timer; stopped (and woken, so its thread ends) when its card or turn ends.
pub struct AcpTimer {
    stopped: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::Thread,
}

impl AcpTimer {
    fn stop(self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Sleeps until `deadline` or until stopped; whether it was stopped.
fn acp_sleep(deadline: Instant, stopped: &std::sync::atomic::AtomicBool) -> bool {
    loop {
        if stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::park_timeout(deadline - now);
    }
}

fn acp_spawn_after(after: Duration, f: impl FnOnce() + Send + 'static) -> AcpTimer {
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stopped.clone();
    let deadline = Instant::now() + after;
    let handle = std::thread::spawn(move || {
        if !acp_sleep(deadline, &flag) {
            f();
        }
    });
    AcpTimer {
        stopped,
        thread: handle.thread().clone(),
    }
}

fn acp_spawn_interval(
    every: Duration,
    mut tick: impl FnMut() -> bool + Send + 'static,
) -> AcpTimer {
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stopped.clone();
    let handle = std::thread::spawn(move || {
        let mut deadline = Instant::now() + every;
        while !acp_sleep(deadline, &flag) && tick() {
            deadline += every;
        }
    });
    AcpTimer {
        stopped,
        thread: handle.thread().clone(),
    }
}

