//! The doorbell's store-load fence, symmetric or asymmetric.
//!
//! A sender pushes into a lane and then loads the receiver's doorbell to see
//! whether its bit is still set (then it need not ring); the receiver swaps
//! the doorbell's bits out and then looks at the lanes. Each side is a store
//! followed by a load of the other side's location, so each needs a
//! store-load fence between the two ([`super::endpoint`] tells the pairing).
//!
//! With [`DoorbellFence::SeqCst`] both sides pay a full fence: on x86 the
//! sender's `mfence` after every push waits for the push's cache line, one
//! line transfer per message. With [`DoorbellFence::Membarrier`] the fence is
//! split unevenly, as folly's `asymmetricLightBarrier` / `asymmetricHeavyBarrier`
//! split it: the sender keeps only a compiler fence, and the receiver, before
//! it parks, calls Linux `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which
//! returns only once every other running thread of the process has passed a
//! full memory barrier. Paired with the heavy fence, a compiler fence orders
//! like a full fence: for each sender, either its push is visible after the
//! receiver's heavy fence, or its later load sees every store the receiver
//! made before it (`docs/mailbox.md`, *The asymmetric fence*, gives the
//! whole argument). Loom cannot model `membarrier`: under loom the fence is
//! always `SeqCst`, and the loom models check that flavour.

#[cfg(not(loom))]
use std::sync::OnceLock;

use crate::sync::{fence, Ordering};

/// How the mailbox orders a sender's push against its look at the doorbell,
/// and the receiver's take of the doorbell against its look at the lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoorbellFence {
    /// A full (`SeqCst`) fence on both sides: after every push, and after
    /// every doorbell swap that took bits. Works everywhere.
    SeqCst,
    /// A compiler fence after every push; the receiver pays with one
    /// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` system call before it
    /// parks, and polls the lanes it found empty since its last such call
    /// while it spins. Linux only, registered once per process.
    Membarrier,
}

impl DoorbellFence {
    /// The fence this process can use: [`DoorbellFence::Membarrier`] if the
    /// kernel accepted the process's registration for private expedited
    /// membarriers (asked once per process), else [`DoorbellFence::SeqCst`].
    pub fn best() -> DoorbellFence {
        DoorbellFence::Membarrier.usable()
    }

    /// This fence, or [`DoorbellFence::SeqCst`] where it is
    /// [`DoorbellFence::Membarrier`] and this process cannot use that
    /// ([`membarrier_status`]).
    pub fn usable(self) -> DoorbellFence {
        match self {
            DoorbellFence::Membarrier if membarrier_status().is_err() => DoorbellFence::SeqCst,
            other => other,
        }
    }

    /// Its name as the CLI and reports print it: `seqcst` or `membarrier`.
    pub fn name(self) -> &'static str {
        match self {
            DoorbellFence::SeqCst => "seqcst",
            DoorbellFence::Membarrier => "membarrier",
        }
    }
}

impl std::str::FromStr for DoorbellFence {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "seqcst" => Ok(DoorbellFence::SeqCst),
            "membarrier" => Ok(DoorbellFence::Membarrier),
            other => Err(format!(
                "unknown doorbell fence '{other}' (expected seqcst or membarrier)"
            )),
        }
    }
}

/// Whether [`DoorbellFence::Membarrier`] is usable here, and if not, why:
/// the kernel's answer to the query and the registration, asked once per
/// process and remembered.
pub fn membarrier_status() -> Result<(), &'static str> {
    #[cfg(loom)]
    {
        Err("loom cannot model membarrier")
    }
    #[cfg(not(loom))]
    {
        static STATUS: OnceLock<Result<(), &'static str>> = OnceLock::new();
        *STATUS.get_or_init(register)
    }
}

#[cfg(all(not(loom), target_os = "linux"))]
fn register() -> Result<(), &'static str> {
    use rustix::thread::{membarrier, membarrier_query, MembarrierCommand, MembarrierQuery};
    let offered = membarrier_query();
    if !offered.contains(MembarrierQuery::PRIVATE_EXPEDITED) {
        return Err("the kernel does not offer MEMBARRIER_CMD_PRIVATE_EXPEDITED");
    }
    membarrier(MembarrierCommand::RegisterPrivateExpedited)
        .map_err(|_| "the kernel refused MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED")
}

#[cfg(all(not(loom), not(target_os = "linux")))]
fn register() -> Result<(), &'static str> {
    Err("membarrier is Linux only")
}

/// The sender's fence, between its push and its load of the doorbell.
#[inline(always)]
pub(super) fn light(kind: DoorbellFence) {
    match kind {
        DoorbellFence::SeqCst => fence(Ordering::SeqCst),
        // Orders only the compiler; the hardware's store-load reordering is
        // undone by the receiver's `heavy` (module doc).
        DoorbellFence::Membarrier => std::sync::atomic::compiler_fence(Ordering::SeqCst),
    }
}

/// The receiver's fence after a doorbell swap that took bits, on every
/// receive's path: a full fence, or nothing where the receiver defers the
/// ordering to [`heavy`] before it parks.
#[inline(always)]
pub(super) fn after_take(kind: DoorbellFence) {
    if kind == DoorbellFence::SeqCst {
        fence(Ordering::SeqCst);
    }
}

/// The receiver's fence before it decides to park on lanes it found empty.
#[cold]
pub(super) fn heavy(kind: DoorbellFence) {
    match kind {
        DoorbellFence::SeqCst => fence(Ordering::SeqCst),
        DoorbellFence::Membarrier => membarrier_now(),
    }
}

#[cfg(all(not(loom), target_os = "linux"))]
fn membarrier_now() {
    use rustix::thread::{membarrier, MembarrierCommand};
    // Mailboxes use this flavour only once `membarrier_status` succeeded, and
    // a registration lasts as long as the process: the call cannot fail
    // then. Should a kernel fail it anyway, a full fence here does not make
    // the senders' compiler fences sufficient, so the failure must be loud.
    if let Err(e) = membarrier(MembarrierCommand::PrivateExpedited) {
        panic!("membarrier(PRIVATE_EXPEDITED) failed after registration: {e}");
    }
}

#[cfg(any(loom, not(target_os = "linux")))]
fn membarrier_now() {
    unreachable!("DoorbellFence::Membarrier is never chosen here");
}
