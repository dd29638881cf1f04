//! Joining a parallel batch's executions: every call runs at once, the outcomes come back in
//! source order.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use futures::future::{join_all, maybe_done, MaybeDone};

/// Up to this many calls, a batch's executions are polled together on every wake-up, each
/// keeping its output in place.
///
/// One wake-up then finishes every call that is ready, with no task, waker or reordering
/// heap per call: that is what `join_all` does up to 30 futures, and it is cheaper than the
/// `FuturesOrdered` it uses above that. The price is that each wake-up polls every call still
/// running, which grows with the square of a batch whose calls finish one by one: larger
/// batches go through `join_all`, whose wake-ups poll only the call that woke.
const POLL_TOGETHER_UP_TO: usize = 128;

/// Runs `futures` concurrently and returns their outputs in their order.
pub(super) async fn join_in_order<F: Future>(
    futures: impl ExactSizeIterator<Item = F>,
) -> Vec<F::Output> {
    if futures.len() > POLL_TOGETHER_UP_TO {
        return join_all(futures).await;
    }
    // All the calls in one allocation, pinned together: a wake-up after a long wait reads
    // them in address order, which the processor's prefetcher follows (a box per call
    // scattered them).
    let mut calls: Pin<Box<[MaybeDone<F>]>> = futures.map(maybe_done).collect::<Box<[_]>>().into();
    poll_fn(|cx| {
        let mut done = true;
        for i in 0..calls.len() {
            // A finished call answers at once, keeping its output.
            done &= call(calls.as_mut(), i).poll(cx).is_ready();
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    // Sized up front: `filter_map` promises no length, so collecting would grow the list
    // step by step, and each step past a kilobyte makes glibc merge the small blocks the
    // calls just freed.
    let mut outputs = Vec::with_capacity(calls.len());
    outputs.extend((0..calls.len()).filter_map(|i| call(calls.as_mut(), i).take_output()));
    outputs
}

/// Call `i` of the pinned batch, pinned.
fn call<F: Future>(calls: Pin<&mut [MaybeDone<F>]>, i: usize) -> Pin<&mut MaybeDone<F>> {
    // SAFETY: the slice's elements are pinned with it (structural pinning): none is moved
    // out, and each is dropped in place with the slice.
    unsafe { calls.map_unchecked_mut(|c| &mut c[i]) }
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
        for n in [2, 31, POLL_TOGETHER_UP_TO, POLL_TOGETHER_UP_TO + 1] {
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
