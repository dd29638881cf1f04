//! Joining a parallel batch's executions: every call runs at once, the outcomes come back in
//! source order.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use futures::future::join_all;

/// Up to this many calls, a batch's executions are polled together on every wake-up.
///
/// One wake-up then finishes every call that is ready, with no task, waker or reordering
/// heap per call: that is what `join_all` does up to [`JOIN_ALL_SMALL`] futures, and it is
/// cheaper than the `FuturesOrdered` it uses above that. The price is that each wake-up polls
/// every call still running, which grows with the square of a batch whose calls finish one
/// by one: larger batches go through `join_all`, whose wake-ups poll only the call that woke.
const POLL_TOGETHER_UP_TO: usize = 128;

/// Up to this many futures, `join_all` polls them together itself, all in one allocation.
const JOIN_ALL_SMALL: usize = 30;

/// Runs `futures` concurrently and returns their outputs in their order.
pub(super) async fn join_in_order<F: Future>(
    futures: impl ExactSizeIterator<Item = F>,
) -> Vec<F::Output> {
    if futures.len() <= JOIN_ALL_SMALL || futures.len() > POLL_TOGETHER_UP_TO {
        return join_all(futures).await;
    }
    // Each future is built in its box, pinned where it is, as `FuturesOrdered` boxes each in
    // a task.
    let mut running: Vec<Option<Pin<Box<F>>>> = futures.map(|f| Some(Box::pin(f))).collect();
    let mut outputs: Vec<Option<F::Output>> = running.iter().map(|_| None).collect();
    let mut left = running.len();
    poll_fn(|cx| {
        for (slot, output) in running.iter_mut().zip(outputs.iter_mut()) {
            if let Some(future) = slot {
                if let Poll::Ready(o) = future.as_mut().poll(cx) {
                    *output = Some(o);
                    *slot = None;
                    left -= 1;
                }
            }
        }
        if left == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    /// Futures that log when they start and end, sleeping `ms[i]` in between.
    fn logged(ms: &[u64], log: &Arc<Mutex<Vec<String>>>) -> Vec<impl Future<Output = usize>> {
        ms.iter()
            .enumerate()
            .map(|(i, &ms)| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(format!("start {i}"));
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    log.lock().unwrap().push(format!("end {i}"));
                    i
                }
            })
            .collect()
    }

    #[tokio::test]
    async fn every_future_starts_before_any_ends_and_outputs_keep_their_order() {
        for n in [
            2,
            JOIN_ALL_SMALL + 1,
            POLL_TOGETHER_UP_TO,
            POLL_TOGETHER_UP_TO + 1,
        ] {
            // Later calls finish first.
            let ms: Vec<u64> = (0..n as u64).map(|i| 1 + (n as u64 - i) % 5).collect();
            let log = Arc::new(Mutex::new(Vec::new()));
            let outputs = join_in_order(logged(&ms, &log).into_iter()).await;
            assert_eq!(outputs, (0..n).collect::<Vec<_>>(), "{n} futures");
            let log = log.lock().unwrap();
            let first_end = log.iter().position(|l| l.starts_with("end"));
            assert_eq!(first_end, Some(n), "{n} futures: all start, then ends");
            assert_eq!(log.len(), 2 * n);
        }
    }

    #[tokio::test]
    async fn futures_that_finish_together_end_in_source_order() {
        // More than `join_all` polls together, as a model's large batch of quick calls.
        let log = Arc::new(Mutex::new(Vec::new()));
        join_in_order(logged(&[5; 64], &log).into_iter()).await;
        let ends: Vec<String> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("end"))
            .cloned()
            .collect();
        let expected: Vec<String> = (0..64).map(|i| format!("end {i}")).collect();
        assert_eq!(ends, expected);
    }

    #[tokio::test]
    async fn no_futures_give_no_outputs() {
        let none: Vec<std::future::Ready<u8>> = Vec::new();
        assert!(join_in_order(none.into_iter()).await.is_empty());
    }
}
