//! Work split over the two cores an analysis may use.

/// Runs `first` here and `second` on a thread of its own; a panic in
/// either is the caller's.
pub(crate) fn on_two_threads<A, B: Send>(
    first: impl FnOnce() -> A,
    second: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|scope| {
        let second = scope.spawn(second);
        let first = first();
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    })
}
