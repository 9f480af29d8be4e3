//! What each side of the rendezvous shares between its network tasks and the caller's thread:
//! its state under a lock, a signal when the state changed, and the small runtime the sockets
//! live on.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::RdzvError;

/// A side's state: whatever it tracks, and why the rendezvous failed once it did.
pub(super) trait State: Default {
    fn failure(&self) -> Option<&String>;
}

pub(super) struct Shared<S> {
    pub state: Mutex<S>,
    pub changed: Condvar,
}

impl<S: State> Shared<S> {
    pub fn new() -> Arc<Shared<S>> {
        Arc::new(Shared {
            state: Mutex::new(S::default()),
            changed: Condvar::new(),
        })
    }

    /// Blocks until `done` holds (it may take what it waited for from the state), the
    /// rendezvous failed, or `deadline` passed: a timeout waiting for what `describe` says.
    pub fn wait_until(
        &self,
        deadline: Instant,
        mut done: impl FnMut(&mut S) -> bool,
        describe: impl Fn(&S) -> String,
    ) -> Result<(), RdzvError> {
        let start = Instant::now();
        let mut st = self.state.lock().unwrap();
        loop {
            if let Some(f) = st.failure() {
                return Err(RdzvError::Failed(f.clone()));
            }
            if done(&mut st) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RdzvError::Timeout {
                    waiting_for: describe(&st),
                    waited: now - start,
                });
            }
            st = self.changed.wait_timeout(st, deadline - now).unwrap().0;
        }
    }
}

/// The runtime a side's sockets live on: one worker thread, so the caller's keeps the GPU.
pub(super) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("netcheck-rdzv")
        .enable_all()
        .build()
}
