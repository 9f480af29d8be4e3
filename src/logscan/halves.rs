//! Per-rank work of a large job split over two threads: after the read, the summary is the
//! only work left, and the reading thread's core is idle.

/// Items above which `map` uses a second thread.
pub const PARALLEL_ITEMS: usize = 512;

/// Whether a second thread is worth it for `items` items.
pub fn worth_it(items: usize) -> bool {
    items > PARALLEL_ITEMS && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// `items.iter().map(f).collect()`, the second half on another thread when `worth_it`.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if !worth_it(items.len()) {
        return items.iter().map(f).collect();
    }
    let (first, second) = items.split_at(items.len() / 2);
    std::thread::scope(|scope| {
        let f = &f;
        let second = scope.spawn(move || second.iter().map(f).collect::<Vec<R>>());
        let mut out: Vec<R> = first.iter().map(f).collect();
        out.extend(join(second));
        out
    })
}

/// The result of a scoped thread; its panic goes on in this thread.
pub fn join<R>(handle: std::thread::ScopedJoinHandle<'_, R>) -> R {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_keeps_the_order_on_either_side_of_the_threshold() {
        for n in [0, 1, super::PARALLEL_ITEMS, super::PARALLEL_ITEMS + 1, 5000] {
            let items: Vec<usize> = (0..n).collect();
            let doubled = super::map(&items, |i| i * 2);
            assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        }
    }
}
