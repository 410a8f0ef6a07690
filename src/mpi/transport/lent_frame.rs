//! A frame's buffer lent to MPI for a non-blocking send or receive.

/// A `Vec<u8>` taken apart so that MPI may hold a `'static` view of its
/// bytes while a request is in flight, and put together again once the
/// request has completed. A request abandoned (its peer failed) never gives
/// the buffer back: it leaks, as MPI may still write it.
pub(super) struct LentFrame {
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

impl LentFrame {
    /// Lends `bytes` (its length as it is): the view MPI reads or writes,
    /// and the parts to [`reclaim`](LentFrame::reclaim) it by.
    pub(super) fn lend(bytes: Vec<u8>) -> (LentFrame, &'static mut [u8]) {
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        let (ptr, len, cap) = (bytes.as_mut_ptr(), bytes.len(), bytes.capacity());
        // SAFETY: the buffer was taken apart just now and is put together
        // again only by `reclaim`, after the request completed (or never,
        // if abandoned): its `len` initialized bytes have no other user
        // meanwhile than the request.
        let view = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
        (LentFrame { ptr, len, cap }, view)
    }

    /// The buffer again.
    ///
    /// # Safety
    /// The request given this frame's view has completed (a successful
    /// test consumed it): MPI no longer reads or writes the bytes.
    pub(super) unsafe fn reclaim(self) -> Vec<u8> {
        // SAFETY: the parts of a `Vec` taken apart in `lend`, no longer
        // used by MPI (the caller's contract).
        unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) }
    }
}
