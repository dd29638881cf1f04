//! The activities a run is waiting on, polled in the order the SDK resolved them (so a
//! batch's end events follow completion order). A small stand-in for `FuturesUnordered`,
//! which wakes its own task to yield: a wake-up the SDK's nondeterminism detector rejects.

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
    futures: HashMap<u64, (LocalBoxFuture<'static, ()>, Waker)>,
    next_id: u64,
    ready: Arc<Ready>,
}

impl InFlight {
    pub(crate) fn push(&mut self, future: LocalBoxFuture<'static, ()>) {
        let id = self.next_id;
        self.next_id += 1;
        let waker = Waker::from(Arc::new(Notify {
            id,
            ready: self.ready.clone(),
        }));
        self.futures.insert(id, (future, waker));
        self.ready.ids.lock().push_back(id);
    }

    /// Polls the futures that were woken, in wake order; true when any made progress.
    pub(crate) fn poll_ready(&mut self, cx: &mut Context<'_>) -> bool {
        *self.ready.parent.lock() = Some(cx.waker().clone());
        let mut polled = false;
        loop {
            let Some(id) = self.ready.ids.lock().pop_front() else {
                return polled;
            };
            let Some((future, waker)) = self.futures.get_mut(&id) else {
                continue;
            };
            polled = true;
            let mut own = Context::from_waker(waker);
            if let Poll::Ready(()) = future.poll_unpin(&mut own) {
                self.futures.remove(&id);
            }
        }
    }
}
