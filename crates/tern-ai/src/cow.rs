//! Copy-on-write through an [`Arc`], without a locked instruction when the handle is the
//! only one.
//!
//! [`Arc::make_mut`] proves it holds the only handle with an atomic compare-and-swap, which
//! costs a locked instruction (about 11 ns on some processors) every time, even when nothing
//! is shared. A run changes its transcript and its streaming message several times a turn,
//! almost always through the only handle: [`make_mut`] tells that case apart with two plain
//! loads and falls back to [`Arc::make_mut`] otherwise.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

/// [`Arc::make_mut`]: the value, cloned first if another [`Arc`] or a [`Weak`](std::sync::Weak)
/// points to it.
///
/// ```
/// use std::sync::Arc;
/// let mut a = Arc::new(vec![1]);
/// tern_ai::cow::make_mut(&mut a).push(2); // the only handle: changed in place
/// let b = a.clone();
/// tern_ai::cow::make_mut(&mut a).push(3); // shared: `a` gets a copy
/// assert_eq!((a.as_slice(), b.as_slice()), (&[1, 2, 3][..], &[1, 2][..]));
/// ```
#[inline]
pub fn make_mut<T: Clone>(this: &mut Arc<T>) -> &mut T {
    // Both loads are relaxed; each fence (an ordering for the compiler on x86, no instruction)
    // makes what the threads that released the count we read did before, happen before what
    // follows: a `Weak` made from a handle since dropped is then seen in the weak count, and
    // the last reads of the value by other handles happen before the writes through the
    // result.
    if Arc::strong_count(this) == 1 {
        fence(Ordering::Acquire);
        if Arc::weak_count(this) == 0 {
            fence(Ordering::Acquire);
            // SAFETY: `this` is the only `Arc` (strong count 1) and no `Weak` exists (weak
            // count 0). Neither count can grow meanwhile: a new `Arc` or `Weak` is made from
            // an existing handle, and the only one is borrowed mutably here for as long as
            // the result lives. So nothing else reads or writes the value, which is what
            // `Arc::get_mut` establishes with a compare-and-swap on the weak count.
            return unsafe { &mut *Arc::as_ptr(this).cast_mut() };
        }
    }
    Arc::make_mut(this)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_when_another_arc_or_weak_points_to_the_value() {
        let mut a = Arc::new(String::from("x"));
        let weak = Arc::downgrade(&a);
        make_mut(&mut a).push('y');
        assert!(weak.upgrade().is_none(), "a weak handle makes it copy");
        let b = a.clone();
        make_mut(&mut a).push('z');
        assert_eq!((a.as_str(), b.as_str()), ("xyz", "xy"));
        let before = Arc::as_ptr(&a);
        make_mut(&mut a).push('!');
        assert_eq!(Arc::as_ptr(&a), before, "the only handle changes in place");
        assert_eq!(a.as_str(), "xyz!");
    }

    #[test]
    fn a_weak_made_on_another_thread_from_a_dropped_handle_makes_it_copy() {
        for _ in 0..200 {
            let mut a = Arc::new(vec![1u64; 8]);
            let b = a.clone();
            let weak = std::thread::spawn(move || Arc::downgrade(&b)).join().ok();
            make_mut(&mut a)[0] = 7;
            let kept = weak.and_then(|w| w.upgrade());
            assert!(kept.is_none(), "the old value went with its last Arc");
            assert_eq!(a[0], 7);
        }
    }

    #[test]
    fn a_handle_dropped_on_another_thread_leaves_the_value_to_this_one() {
        for _ in 0..200 {
            let mut a = Arc::new(vec![0u64; 64]);
            let b = a.clone();
            let reader = std::thread::spawn(move || b.iter().sum::<u64>());
            // Either still shared (a copy) or no longer (in place): the reader's sum is 0
            // in both cases, and the write never races its reads.
            make_mut(&mut a)[0] = 7;
            assert_eq!(reader.join().ok(), Some(0));
            assert_eq!(a[0], 7);
        }
    }
}
