//! Mailboxes: SPSC lanes between ranks, with a per-receiver doorbell and
//! parking without lost wake-ups. `docs/mailbox.md` tells the design and the
//! measurements behind the waiting policy.
//!
//! * A **lane** (from -> to) is a fixed-capacity ring pushed only by `from`'s
//!   [`Endpoint`] and popped only by `to`'s. It is created on the first send
//!   from `from` to `to`, so a team of 1024 ranks pays only for the pairs that
//!   talk. A full lane hands the message back (`Err(msg)`), rtrb-style.
//!   A slot is two cache lines for the runtime's messages; a value a
//!   [`Compact`] codec squeezes into 56 bytes moves in the first alone
//!   ([`Mailboxes::with_codec`]; [`Mailboxes::new`] moves every value whole).
//! * The **doorbell** of a receiver is a bitset of `AtomicU64` words, one bit
//!   per sender. A sender sets its bit after publishing into the lane (unless
//!   it is still set: then the receiver is bound to look at the lane anyway);
//!   the receiver swaps whole words to zero into a private *pending* set and
//!   serves the pending lanes round-robin, one message per lane per turn, so
//!   it never scans lanes that have nothing. The lane it served last (the
//!   *hint*) it polls directly, and leaves that lane's bit set.
//! * **Waiting** spins briefly, then yields, then parks. A receiver about to
//!   park stores `SLEEPING` and then swaps every doorbell word (and the
//!   notification flag) with a read-modify-write; a sender rings with a
//!   read-modify-write and then loads the state. Whichever RMW comes second in
//!   the word's modification order synchronizes with the first, so either the
//!   receiver sees the bit or the sender sees `SLEEPING` and unparks it.
//!
//! ```
//! use corrected::mailbox::{Mailboxes, Woke};
//!
//! let boxes = Mailboxes::<u64>::new(2, 8);
//! std::thread::scope(|s| {
//!     let mut a = boxes.endpoint(0).unwrap();
//!     let mut b = boxes.endpoint(1).unwrap();
//!     s.spawn(move || {
//!         while b.wait(None) != Woke::Message {}
//!         let (from, x) = b.try_recv().unwrap();
//!         b.send(from, x + 1).unwrap();
//!     });
//!     a.send(1, 41).unwrap();
//!     loop {
//!         if let Some((from, x)) = a.try_recv() {
//!             assert_eq!((from, x), (1, 42));
//!             break;
//!         }
//!         a.wait(None);
//!     }
//! });
//! ```

mod asymmetric;
mod compact;
mod endpoint;
#[cfg(all(test, not(loom)))]
mod fence_tests;
pub mod frames;
mod lane;
mod parking;
#[cfg(all(test, not(loom)))]
mod tests;

use std::marker::PhantomData;
use std::ptr;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, UnsafeCell};
pub use asymmetric::{membarrier_status, DoorbellFence};
pub use compact::{Compact, Whole};
pub use endpoint::Endpoint;
use lane::Lane;
use parking::{wake_sleeper, Waiter};

/// A member of a team, numbered `0..ranks`.
pub type Rank = crate::types::Rank;

/// Why [`Endpoint::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// A message may be pending: call [`Endpoint::try_recv`]. (It may also be
    /// a message that another `try_recv` has already taken: a hint, not a
    /// promise.)
    Message,
    /// [`Mailboxes::wake`] was called for this rank since the last wait that
    /// returned `Notified`. Messages may be pending as well.
    Notified,
    /// The deadline passed with neither of the above.
    Timeout,
}

/// Senders per doorbell word, and lanes per lazily allocated lane group.
const GROUP: usize = 64;
/// Doorbell words per cache-padded line (128 bytes).
const WORDS_PER_LINE: usize = 16;

/// How long [`Endpoint::wait`] polls before it parks: `SPINS` rounds of
/// poll + `spin_loop`, then `YIELDS` rounds of poll + `yield_now`. From
/// measurements on this 2-vCPU machine (docs/mailbox.md): a spin round costs
/// about 25-30 ns (PAUSE is ~25 ns), so 64 rounds wait about 2 us, some four
/// cross-core round trips (one way is 0.2-0.25 us): a peer that is running
/// and answering is caught while spinning (fewer spins let replies slip into
/// the yield or park phase: 16 spins made the waiting ping-pong 6x slower). A
/// yield costs about 0.5 us when the core is otherwise idle, so 8 yields
/// cover another ~4 us, about what a park/unpark wake-up costs here (2-7 us).
/// More yields hurt oversubscribed teams: with 64 ranks on 2 cores, 32
/// yields per wait made each hop of a token ring 2.3x slower than 8, since
/// every yielding rank steals a time slice from the one with work.
#[cfg(not(loom))]
const SPINS: u32 = 64;
#[cfg(not(loom))]
const YIELDS: u32 = 8;
/// Under loom, a spin or a yield is a `yield_now` to the model checker, which
/// then runs the other threads first: a sender would always finish before
/// the receiver parks, hiding the very race the models are for. So under
/// loom `wait` polls once and goes straight to the parking protocol.
#[cfg(loom)]
const SPINS: u32 = 0;
#[cfg(loom)]
const YIELDS: u32 = 0;

const RUNNING: u32 = 0;
const SLEEPING: u32 = 1;

/// Per-receiver state that is written rarely: read by every sender after it
/// rings, so it lives apart from the doorbell words that senders write.
struct Header {
    /// `RUNNING` or `SLEEPING` (the receiver is parked or about to park).
    state: AtomicU32,
    /// Set by [`Mailboxes::wake`]; taken by the receiver's wait.
    notified: AtomicBool,
    /// Whether the endpoint of this rank is out.
    taken: AtomicBool,
    /// The thread that parks for this rank's endpoint (null before the first
    /// park). Replaced only by the rank's endpoint, read by unparkers.
    waiter: AtomicPtr<Waiter>,
    /// Unparkers between their increment and decrement (see [`unpark`]): a
    /// replaced `waiter` may be freed only when this is seen at 0.
    unparkers: AtomicUsize,
    /// Replaced waiters not yet freed because an unparker was active. Touched
    /// only by the rank's endpoint (and by drop).
    retired: UnsafeCell<Vec<*mut Waiter>>,
    /// Unit tests only: how many times the rank's endpoint has gone to sleep
    /// in [`Endpoint::park`], each time after a probe that found nothing. A
    /// test that sees it grow (Acquire) knows the receiver is parked or about
    /// to call `park` with nothing seen: from then on only an unpark wakes
    /// it, so the test exercises that path instead of sleeping and hoping.
    #[cfg(test)]
    parks: AtomicU32,
}

/// The lanes into one receiver from the 64 senders of one doorbell word.
struct Group<T, C: Compact<T>> {
    lanes: [AtomicPtr<Lane<T, C>>; GROUP],
}

/// All inboxes of a team of `ranks` ranks.
///
/// Lane (from -> to) is created lazily on the first send from `from` to `to`
/// (memory stays bounded for 1024 ranks: only pairs that talk get a lane); it
/// is a fixed-capacity ring, pushed only by `from`'s endpoint, popped only by
/// `to`'s endpoint. Lanes and undelivered messages are freed on drop.
pub struct Mailboxes<T, C: Compact<T> = Whole> {
    ranks: u32,
    capacity: usize,
    /// Doorbell words per receiver: ceil(ranks / 64).
    words: usize,
    /// Doorbell lines per receiver: ceil(words / 16).
    lines: usize,
    headers: Box<[CachePadded<Header>]>,
    /// Receiver `r`'s doorbell words are `bells[r * lines ..][..]`, word `w`
    /// in line `w / 16`: padded, so receivers do not share lines.
    bells: Box<[CachePadded<[AtomicU64; WORDS_PER_LINE]>]>,
    /// `groups[to * words + from / 64]`: null until a sender of that group
    /// first sends to `to`.
    groups: Box<[AtomicPtr<Group<T, C>>]>,
    /// The doorbell's store-load fence, the same for every endpoint.
    fence: DoorbellFence,
    /// Mailboxes own the undelivered values of T (for drop check).
    _owns: PhantomData<T>,
}

// SAFETY: Mailboxes own values of T (in lanes), so moving them to another
// thread needs T: Send. All shared state is atomics, a mutex, and lanes whose
// roles are guarded by the one-endpoint-per-rank rule.
unsafe impl<T: Send, C: Compact<T>> Send for Mailboxes<T, C> where C::Small: Send {}
// SAFETY: through `&Mailboxes`, endpoints on different threads hand values of
// T from one thread to another, which needs T: Send (not T: Sync: no value is
// ever shared, each is moved).
unsafe impl<T: Send, C: Compact<T>> Sync for Mailboxes<T, C> where C::Small: Send {}

impl<T: Send> Mailboxes<T> {
    /// Inboxes for `ranks` ranks whose lanes hold `lane_capacity` messages
    /// each, rounded up to a power of two, at least 2; every message
    /// travels whole ([`Whole`]).
    ///
    /// # Panics
    ///
    /// If the rounded capacity overflows `usize`.
    pub fn new(ranks: u32, lane_capacity: usize) -> Self {
        Self::with_codec(ranks, lane_capacity)
    }
}

impl<T: Send, C: Compact<T>> Mailboxes<T, C> {
    /// As [`Mailboxes::new`], with the messages that codec `C` compacts
    /// travelling in one cache line ([`Compact`]).
    ///
    /// # Panics
    ///
    /// If the rounded capacity overflows `usize`.
    pub fn with_codec(ranks: u32, lane_capacity: usize) -> Self {
        let capacity = lane_capacity
            .max(2)
            .checked_next_power_of_two()
            .expect("lane capacity too large");
        let n = ranks as usize;
        let words = n.div_ceil(GROUP);
        let lines = words.div_ceil(WORDS_PER_LINE);
        Mailboxes {
            ranks,
            capacity,
            words,
            lines,
            headers: (0..n)
                .map(|_| {
                    CachePadded::new(Header {
                        state: AtomicU32::new(RUNNING),
                        notified: AtomicBool::new(false),
                        taken: AtomicBool::new(false),
                        waiter: AtomicPtr::new(ptr::null_mut()),
                        unparkers: AtomicUsize::new(0),
                        retired: UnsafeCell::new(Vec::new()),
                        #[cfg(test)]
                        parks: AtomicU32::new(0),
                    })
                })
                .collect(),
            bells: (0..n * lines)
                .map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            groups: (0..n * words)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            fence: DoorbellFence::SeqCst,
            _owns: PhantomData,
        }
    }

    /// The same mailboxes with the doorbell's store-load fence of flavour
    /// `fence` ([`DoorbellFence`]); [`DoorbellFence::Membarrier`] where
    /// this process cannot use it ([`membarrier_status`]) falls back to
    /// [`DoorbellFence::SeqCst`] (see [`Mailboxes::doorbell_fence`]). New
    /// mailboxes use `SeqCst`. Taking `self` makes it impossible to change
    /// the flavour while endpoints are out: senders and receivers must agree.
    pub fn with_doorbell_fence(mut self, fence: DoorbellFence) -> Self {
        self.fence = fence.usable();
        self
    }

    /// The doorbell fence in use ([`Mailboxes::with_doorbell_fence`]).
    pub fn doorbell_fence(&self) -> DoorbellFence {
        self.fence
    }

    /// The number of ranks.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// The capacity of every lane (a power of two, at least 2).
    pub fn lane_capacity(&self) -> usize {
        self.capacity
    }

    /// The endpoint of `rank`; at most one per rank at a time (None if out of
    /// range or already taken). Dropping an endpoint returns it: a later call
    /// gets a fresh one that receives whatever the old one left.
    pub fn endpoint(&self, rank: Rank) -> Option<Endpoint<'_, T, C>> {
        let header = self.headers.get(rank as usize)?;
        // Acquire: pairs with the Release store in a previous endpoint's
        // drop, so its private lane positions (consumer and producer cells)
        // happen before our use of them.
        header
            .taken
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(Endpoint::new(self, rank))
    }

    /// Wakes `rank`'s endpoint if it is waiting, or makes its next wait
    /// return at once, with [`Woke::Notified`]. Out-of-range ranks are
    /// ignored.
    pub fn wake(&self, rank: Rank) {
        let Some(header) = self.headers.get(rank as usize) else {
            return;
        };
        // AcqRel RMW: if the receiver's pre-park swap of `notified` comes
        // first in the flag's modification order, this swap reads from it
        // (every write of the flag is an RMW) and so synchronizes with it: the
        // receiver's earlier `state = SLEEPING` is then visible to the load
        // below. If ours comes first, the receiver's swap sees `true`.
        header.notified.swap(true, Ordering::AcqRel);
        wake_sleeper(header);
    }
}

impl<T, C: Compact<T>> Mailboxes<T, C> {
    #[inline]
    fn bell(&self, to: usize, word: usize) -> &AtomicU64 {
        &self.bells[to * self.lines + word / WORDS_PER_LINE][word % WORDS_PER_LINE]
    }

    #[inline]
    fn group_slot(&self, from: usize, to: usize) -> &AtomicPtr<Group<T, C>> {
        &self.groups[to * self.words + from / GROUP]
    }

    /// The lane (from -> to) if it exists.
    #[inline]
    fn lane(&self, from: usize, to: usize) -> Option<&Lane<T, C>> {
        // Acquire (both loads): pairs with the Release of the CAS that
        // installed the group / lane, so their initialization is visible.
        let group = self.group_slot(from, to).load(Ordering::Acquire);
        if group.is_null() {
            return None;
        }
        // SAFETY: a non-null group pointer points to a Group that stays
        // allocated until the Mailboxes are dropped, which `&self` prevents.
        let lane = unsafe { &*group }.lanes[from % GROUP].load(Ordering::Acquire);
        // SAFETY: the same holds for lanes.
        (!lane.is_null()).then(|| unsafe { &*lane })
    }

    /// The lane (from -> to), created if this is its first use. Only the
    /// endpoint of `from` calls this for a given `from`.
    #[cold]
    fn create_lane(&self, from: usize, to: usize) -> &Lane<T, C> {
        let slot = self.group_slot(from, to);
        let mut group = slot.load(Ordering::Acquire);
        if group.is_null() {
            let fresh = Box::into_raw(Box::new(Group {
                lanes: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            }));
            // AcqRel on success: Release publishes the new group's
            // initialization to readers that Acquire the pointer. Acquire on
            // failure: we use the winner's group, so we need its
            // initialization. The 64 senders of this word race here.
            group = match slot.compare_exchange(
                ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => fresh,
                Err(winner) => {
                    // SAFETY: `fresh` came from Box::into_raw above and was
                    // never shared: the CAS failed.
                    drop(unsafe { Box::from_raw(fresh) });
                    winner
                }
            };
        }
        // SAFETY: non-null groups live as long as the Mailboxes.
        let cell = &unsafe { &*group }.lanes[from % GROUP];
        let fresh = Box::into_raw(Box::new(Lane::new(self.capacity)));
        // Only `from` installs this lane, so the CAS cannot fail while the
        // endpoint rule holds; it is a CAS anyway so that a failure would
        // leak nothing and use the installed lane. Release publishes the
        // lane's initialization to the receiver's Acquire load.
        let lane = match cell.compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(installed) => {
                debug_assert!(false, "lane {from} -> {to} installed twice");
                // SAFETY: `fresh` was never shared: the CAS failed.
                drop(unsafe { Box::from_raw(fresh) });
                installed
            }
        };
        // SAFETY: non-null lanes live as long as the Mailboxes.
        unsafe { &*lane }
    }
}

impl<T, C: Compact<T>> Drop for Mailboxes<T, C> {
    fn drop(&mut self) {
        for header in self.headers.iter() {
            let waiter = header.waiter.load(Ordering::Acquire);
            // SAFETY: `&mut self`: no endpoint or unparker is active; each
            // handle came from Box::into_raw and is either the current waiter
            // or retired, never both, and is freed once here.
            let retired = header
                .retired
                .with_mut(|r| unsafe { std::mem::take(&mut *r) });
            for waiter in retired
                .into_iter()
                .chain((!waiter.is_null()).then_some(waiter))
            {
                // SAFETY: see above.
                unsafe { Waiter::free(waiter) };
            }
        }
        for slot in self.groups.iter() {
            let group = slot.load(Ordering::Acquire);
            if group.is_null() {
                continue;
            }
            // SAFETY: `&mut self`: no endpoint is alive (they borrow the
            // Mailboxes), so nobody else can reach this group; it came from
            // Box::into_raw and is freed once, here.
            let group = unsafe { Box::from_raw(group) };
            for cell in group.lanes.iter() {
                let lane = cell.load(Ordering::Acquire);
                if !lane.is_null() {
                    // SAFETY: as for the group; dropping the lane drops its
                    // undelivered messages.
                    drop(unsafe { Box::from_raw(lane) });
                }
            }
        }
    }
}

impl<T, C: Compact<T>> std::fmt::Debug for Mailboxes<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailboxes")
            .field("ranks", &self.ranks)
            .field("lane_capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}
