//! The activities a run is waiting on, polled in the order the SDK resolved them (so a
//! batch's end events follow completion order). A small stand-in for `FuturesUnordered`,
//! which wakes its own task to yield: a wake-up the SDK's nondeterminism detector rejects.
//!
//! One answer is handed over at a time (the driver lets the loop act on it before the
//! next), and while a hook call is out, other answers wait: the loop handles each
//! completion, with the hooks it calls, before the next one, as with hooks that return at
//! once in a local run. Several activities that complete within one workflow task are
//! thus still handled in their completion order.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;

#[derive(Default)]
struct Ready {
    ids: Mutex<VecDeque<u64>>,
    parent: Mutex<Option<Waker>>,
}

struct Notify {
    id: u64,
    ready: Arc<Ready>,
}

impl Wake for Notify {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        {
            let mut ids = self.ready.ids.lock();
            if !ids.contains(&self.id) {
                ids.push_back(self.id);
            }
        }
        // Called by the SDK while it resolves the activity: passing it on is an SDK wake.
        if let Some(w) = self.ready.parent.lock().as_ref() {
            w.wake_by_ref();
        }
    }
}

/// Futures started by the driver, each polled when its waker fired.
#[derive(Default)]
pub(crate) struct InFlight {
    /// Each future, its waker, and whether it is a hook call.
    futures: HashMap<u64, (LocalBoxFuture<'static, ()>, Waker, bool)>,
    next_id: u64,
    ready: Arc<Ready>,
}

impl InFlight {
    /// Adds a future; `hook`: a hook call, which other answers wait for.
    pub(crate) fn push(&mut self, future: LocalBoxFuture<'static, ()>, hook: bool) {
        let id = self.next_id;
        self.next_id += 1;
        let waker = Waker::from(Arc::new(Notify {
            id,
            ready: self.ready.clone(),
        }));
        self.futures.insert(id, (future, waker, hook));
        self.ready.ids.lock().push_back(id);
    }

    /// Marks every future woken (they see the run's abort when next polled).
    pub(crate) fn wake_all(&mut self) {
        let mut ids = self.ready.ids.lock();
        for id in self.futures.keys() {
            if !ids.contains(id) {
                ids.push_back(*id);
            }
        }
    }

    /// Polls the futures that were woken, in wake order, until one completes; true when any
    /// made progress. A woken future that is not a hook call waits while one is out.
    pub(crate) fn poll_ready(&mut self, cx: &mut Context<'_>) -> bool {
        *self.ready.parent.lock() = Some(cx.waker().clone());
        let mut polled = false;
        let mut held = Vec::new();
        loop {
            let Some(id) = self.ready.ids.lock().pop_front() else {
                break;
            };
            let hook_out = self.futures.values().any(|(_, _, hook)| *hook);
            let Some((future, waker, hook)) = self.futures.get_mut(&id) else {
                continue;
            };
            if hook_out && !*hook {
                held.push(id);
                continue;
            }
            polled = true;
            let mut own = Context::from_waker(waker);
            if let Poll::Ready(()) = future.poll_unpin(&mut own) {
                self.futures.remove(&id);
                break;
            }
        }
        // The held ones go first next time, in the order they were woken.
        let mut ids = self.ready.ids.lock();
        ids.retain(|id| !held.contains(id));
        for id in held.into_iter().rev() {
            ids.push_front(id);
        }
        polled
    }
}
