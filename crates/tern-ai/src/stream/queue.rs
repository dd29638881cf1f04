//! The queue between a stream's producer and its consumer.
//!
//! A response can queue 100k deltas before its consumer first runs, so the queue grows by
//! whole chunks (pushing never copies earlier events), and the consumer takes everything
//! queued in one lock. Full-size chunks are kept for the next large response in a bounded
//! process-wide pool (at most [`POOLED_CHUNKS`] per event type): glibc hands freed memory at
//! the top of its heap back to the kernel, and a response that queued megabytes of events
//! would otherwise pay a page fault for every 4 KB of its queue, every time.

use std::any::{Any, TypeId};
use std::collections::VecDeque;

use parking_lot::Mutex;

/// Events in a full-size chunk. Larger blocks would come from `mmap`, whose pages are
/// faulted in anew each time.
const CHUNK: usize = 1024;

/// Full-size chunks kept per event type: 128 of 1,024 events, 4 MB for 32-byte events. A
/// chunk beyond that is freed.
const POOLED_CHUNKS: usize = 128;

/// A FIFO of chunks: the producer's side.
pub(super) struct Chunks<E: Send + 'static> {
    full: Vec<Vec<E>>,
    last: Vec<E>,
}

impl<E: Send + 'static> Chunks<E> {
    pub(super) const fn new() -> Self {
        Chunks {
            full: Vec::new(),
            last: Vec::new(),
        }
    }

    #[inline]
    pub(super) fn push(&mut self, event: E) {
        self.make_room();
        self.last.push(event);
    }

    /// Makes room for one more event in the last chunk. Inlined into the push paths; the
    /// rare step out of line.
    #[inline]
    fn make_room(&mut self) {
        if self.last.len() == self.last.capacity() {
            self.next_chunk();
        }
    }

    #[cold]
    fn next_chunk(&mut self) {
        // Small responses stay in small chunks (thousands of agents may each hold a stream);
        // a large one reaches full-size chunks, which come from the pool when it has some.
        let cap = (self.last.capacity() * 2).clamp(8, CHUNK);
        let next = match cap == CHUNK {
            true => pool::take().unwrap_or_else(|| Vec::with_capacity(CHUNK)),
            false => Vec::with_capacity(cap),
        };
        let full = std::mem::replace(&mut self.last, next);
        if !full.is_empty() {
            self.full.push(full);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.last.is_empty() && self.full.is_empty()
    }
}

impl<E: super::StreamEvent> Chunks<E> {
    /// Queues `events` up to and including the first that completes the stream, and returns
    /// that one's result; the events after it are dropped unqueued.
    ///
    /// A chunk's room is filled in one `extend`, so that each event is built where the chunk
    /// keeps it rather than built aside and copied in.
    pub(super) fn extend(&mut self, events: &mut impl Iterator<Item = E>) -> Option<E::Output> {
        loop {
            self.make_room();
            let start = self.last.len();
            let room = self.last.capacity() - start;
            self.last.extend(events.by_ref().take(room));
            let added = &self.last[start..];
            let last = added
                .iter()
                .enumerate()
                .find_map(|(i, e)| Some((i, e.completes()?)));
            if let Some((i, result)) = last {
                self.last.truncate(start + i + 1);
                return Some(result);
            }
            if added.len() < room || events.size_hint().1 == Some(0) {
                return None;
            }
        }
    }
}

impl<E: Send + 'static> Drop for Chunks<E> {
    fn drop(&mut self) {
        if self.full.is_empty() && self.last.capacity() < CHUNK {
            return;
        }
        // A stream dropped unread: its events go, its full-size chunks go back.
        for chunk in self.full.drain(..) {
            pool::recycle(chunk);
        }
        pool::recycle(std::mem::take(&mut self.last));
    }
}

/// The consumer's side: taken in one lock, handed out one by one.
pub(super) struct Drain<E: Send + 'static> {
    // A deque, so that the chunk's buffer is still there to recycle once it is read.
    current: VecDeque<E>,
    rest: std::vec::IntoIter<Vec<E>>,
}

impl<E: Send + 'static> Drain<E> {
    pub(super) fn new() -> Self {
        Drain {
            current: VecDeque::new(),
            rest: Vec::new().into_iter(),
        }
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<E> {
        match self.current.pop_front() {
            Some(e) => Some(e),
            None => self.next_chunk(),
        }
    }

    #[cold]
    fn next_chunk(&mut self) -> Option<E> {
        loop {
            let next = VecDeque::from(self.rest.next()?);
            pool::recycle(Vec::from(std::mem::replace(&mut self.current, next)));
            if let Some(e) = self.current.pop_front() {
                return Some(e);
            }
        }
    }

    /// Takes everything queued (the drain is empty when this is called).
    pub(super) fn refill(&mut self, chunks: &mut Chunks<E>) {
        let last = std::mem::take(&mut chunks.last);
        let next = match chunks.full.is_empty() {
            // The usual case: everything fits one chunk, and no list of chunks is built.
            true => last,
            false => {
                let mut full = std::mem::take(&mut chunks.full);
                full.push(last);
                self.rest = full.into_iter();
                self.rest.next().unwrap_or_default()
            }
        };
        let done = std::mem::replace(&mut self.current, VecDeque::from(next));
        if done.capacity() >= CHUNK {
            // An empty deque turns back into a vector without moving anything.
            pool::recycle(Vec::from(done));
        }
    }
}

impl<E: Send + 'static> Drop for Drain<E> {
    fn drop(&mut self) {
        if self.rest.len() == 0 && self.current.capacity() < CHUNK {
            return;
        }
        for chunk in self.rest.by_ref() {
            pool::recycle(chunk);
        }
        pool::recycle(Vec::from(std::mem::take(&mut self.current)));
    }
}

mod pool {
    use super::*;

    /// Per event type: its id and a `Vec<Vec<E>>` of empty full-size chunks.
    pub(super) static POOL: Mutex<Vec<(TypeId, Box<dyn Any + Send>)>> = Mutex::new(Vec::new());

    /// The chunks kept for event type `E`, if any were ever given back.
    pub(super) fn chunks_of<E: Send + 'static>(
        pool: &mut [(TypeId, Box<dyn Any + Send>)],
    ) -> Option<&mut Vec<Vec<E>>> {
        let (_, chunks) = pool.iter_mut().find(|(t, _)| *t == TypeId::of::<E>())?;
        chunks.downcast_mut::<Vec<Vec<E>>>()
    }

    /// An empty full-size chunk, if the pool has one.
    pub(super) fn take<E: Send + 'static>() -> Option<Vec<E>> {
        chunks_of::<E>(&mut POOL.lock())?.pop()
    }

    /// Keeps a full-size chunk, emptied, unless the pool has enough; frees any other.
    #[inline]
    pub(super) fn recycle<E: Send + 'static>(chunk: Vec<E>) {
        if chunk.capacity() >= CHUNK {
            put(chunk);
        }
    }

    #[cold]
    fn put<E: Send + 'static>(mut chunk: Vec<E>) {
        // The events go before the lock is taken.
        chunk.clear();
        let mut pool = POOL.lock();
        if chunks_of::<E>(&mut pool).is_none() {
            pool.push((TypeId::of::<E>(), Box::new(Vec::<Vec<E>>::new())));
        }
        if let Some(chunks) = chunks_of::<E>(&mut pool) {
            if chunks.len() < POOLED_CHUNKS {
                chunks.push(chunk);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    // Each test has its own event type, so that the process-wide pool is not shared between
    // tests running at once.
    fn pooled<E: Send + 'static>() -> usize {
        pool::chunks_of::<E>(&mut pool::POOL.lock()).map_or(0, |c| c.len())
    }

    #[test]
    fn events_come_out_in_order_across_chunks_and_refills() {
        struct Ev(usize);
        let (mut chunks, mut drain) = (Chunks::new(), Drain::new());
        let (mut next_in, mut next_out) = (0, 0);
        // Bursts of growing size, read in between: small chunks, then full-size ones.
        for burst in [1, 7, 9, 1000, 3000, 5, 2500] {
            for _ in 0..burst {
                chunks.push(Ev(next_in));
                next_in += 1;
            }
            drain.refill(&mut chunks);
            assert!(chunks.is_empty());
            while let Some(Ev(i)) = drain.pop() {
                assert_eq!(i, next_out);
                next_out += 1;
            }
        }
        assert_eq!(next_out, next_in);
        assert!(
            pooled::<Ev>() > 0,
            "read full-size chunks go back to the pool"
        );
    }

    #[test]
    fn a_large_queue_reuses_pooled_chunks_and_drops_unread_events() {
        struct Ev(#[allow(dead_code)] Arc<()>);
        let alive = Arc::new(());
        let mut chunks = Chunks::new();
        for _ in 0..5 * CHUNK {
            chunks.push(Ev(alive.clone()));
        }
        drop(chunks);
        assert_eq!(Arc::strong_count(&alive), 1, "unread events are dropped");
        let kept = pooled::<Ev>();
        assert!(kept >= 4, "the full-size chunks were kept ({kept})");

        let mut chunks = Chunks::new();
        for _ in 0..3 * CHUNK {
            chunks.push(Ev(alive.clone()));
        }
        assert_eq!(
            pooled::<Ev>(),
            kept - 3,
            "a new queue takes chunks from the pool"
        );
        let mut drain = Drain::new();
        drain.refill(&mut chunks);
        for _ in 0..CHUNK + 1 {
            assert!(drain.pop().is_some());
        }
        drop(drain);
        assert_eq!(
            Arc::strong_count(&alive),
            1,
            "events left in a drain are dropped"
        );
        assert_eq!(
            pooled::<Ev>(),
            kept,
            "a dropped drain gives its chunks back"
        );
    }

    #[test]
    fn extend_queues_up_to_the_final_event_across_chunks() {
        #[derive(Debug)]
        struct Ev(usize);
        impl crate::stream::StreamEvent for Ev {
            type Output = usize;
            fn completes(&self) -> Option<usize> {
                (self.0 % 10_000 == 2_500).then_some(self.0)
            }
        }
        let drained = |chunks: &mut Chunks<Ev>| {
            let mut drain = Drain::new();
            drain.refill(chunks);
            std::iter::from_fn(|| drain.pop().map(|Ev(i)| i)).collect::<Vec<_>>()
        };
        let mut chunks = Chunks::new();
        // Batches that end inside a chunk, exactly at a chunk's end, and across chunks.
        for (from, to) in [(0, 5), (5, 8), (8, 16), (16, 1500)] {
            assert_eq!(chunks.extend(&mut (from..to).map(Ev)), None);
        }
        assert_eq!(drained(&mut chunks), (0..1500).collect::<Vec<_>>());

        // The final event ends the batch: it is queued, what follows it is not.
        assert_eq!(chunks.extend(&mut (0..5000).map(Ev)), Some(2_500));
        assert_eq!(drained(&mut chunks), (0..=2_500).collect::<Vec<_>>());
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_chunks() {
        struct Ev(#[allow(dead_code)] u8);
        let mut chunks = Chunks::new();
        for _ in 0..(POOLED_CHUNKS + 20) * CHUNK {
            chunks.push(Ev(0));
        }
        drop(chunks);
        assert_eq!(pooled::<Ev>(), POOLED_CHUNKS);
    }
}
