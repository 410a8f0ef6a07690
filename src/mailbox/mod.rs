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

mod compact;
pub mod frames;
mod lane;
#[cfg(all(test, not(loom)))]
mod tests;

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::fault_point::{self, FaultPoint};
use crate::sync::{
    self, fence, thread, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    UnsafeCell,
};
pub use compact::{Compact, Whole};
use lane::Lane;

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

/// A registered thread handle.
struct Waiter {
    thread: thread::Thread,
    /// Touched (read) by every unparker that uses the handle and (written)
    /// just before the handle is freed: zero-sized and free with std; under
    /// loom it makes a free that is not ordered after every use a reported
    /// data race, so the models check the reclamation argument.
    in_use: UnsafeCell<()>,
}

impl Waiter {
    /// Frees a handle that came from `Box::into_raw`.
    ///
    /// # Safety
    ///
    /// `waiter` came from `Box::into_raw`, is freed once, and every use of it
    /// happens before this call.
    unsafe fn free(waiter: *mut Waiter) {
        // SAFETY: the caller's contract.
        let waiter = unsafe { Box::from_raw(waiter) };
        waiter.in_use.with_mut(|_| ());
    }
}

impl Header {
    /// Called right before the rank's endpoint parks: counts the park for
    /// the unit tests (see `parks`); nothing otherwise.
    #[inline(always)]
    fn parking(&self) {
        // Release: the probe that found nothing happens before a test's
        // Acquire load that sees this count, and so before the test's next
        // ring or wake, which then reads SLEEPING and unparks.
        #[cfg(test)]
        self.parks.fetch_add(1, Ordering::Release);
    }

    /// Makes `me` the thread that unparkers wake. Called only by the rank's
    /// endpoint, before it announces `SLEEPING`.
    #[cold]
    fn register(&self, me: thread::Thread) {
        // AcqRel: Release publishes the new handle to unparkers that Acquire
        // the pointer.
        let old = self.waiter.swap(
            Box::into_raw(Box::new(Waiter {
                thread: me,
                in_use: UnsafeCell::new(()),
            })),
            Ordering::AcqRel,
        );
        // SAFETY: `retired` is touched only by the rank's endpoint (we are
        // it: `&mut` endpoint, one per rank, handovers ordered by `taken`).
        let retired = self.retired.with_mut(|r| unsafe { &mut *r });
        if !old.is_null() {
            retired.push(old);
        }
        // An RMW, so that it reads the latest count: if it precedes an
        // unparker's increment in the counter's modification order, that
        // increment reads from it (all writes are RMWs) and the unparker's
        // later load of `waiter` sees our swap, not `old`; if it follows the
        // increment and reads 0, it also follows that unparker's Release
        // decrement, which then happens before the frees below.
        if self.unparkers.fetch_add(0, Ordering::AcqRel) == 0 {
            for waiter in retired.drain(..) {
                // SAFETY: came from Box::into_raw in an earlier register, was
                // replaced there, and no unparker can still hold it (above).
                unsafe { Waiter::free(waiter) };
            }
        }
    }
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
            _owns: PhantomData,
        }
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
        Some(Endpoint {
            boxes: self,
            rank,
            pending: vec![0; self.words].into_boxed_slice(),
            pending_count: 0,
            start: 0,
            hint: None,
            registered: None,
            spins: SPINS,
            _not_sync: PhantomData,
        })
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

/// After a ring or a notification: unparks the receiver if it sleeps. Only
/// the receiver writes `state`. Several senders that see SLEEPING all
/// unpark; after the first, std's `unpark` finds the token set and makes no
/// system call.
#[inline]
fn wake_sleeper(header: &Header) {
    // Relaxed: the ordering argument is the RMW pair on the doorbell word or
    // the flag that precedes this call.
    if header.state.load(Ordering::Relaxed) == SLEEPING {
        unpark(header);
    }
}

/// Unparks the thread registered as `header`'s waiter, if any. Lock-free:
/// an unparker never blocks (nor waits for a preempted thread), and the
/// receiver never blocks on an unparker.
#[cold]
fn unpark(header: &Header) {
    // AcqRel: announces this unparker before it loads `waiter` (see
    // `Header::register` for the pairing).
    header.unparkers.fetch_add(1, Ordering::AcqRel);
    // Acquire: pairs with the Release swap in `register`, so the handle's
    // contents are visible.
    let waiter = header.waiter.load(Ordering::Acquire);
    if !waiter.is_null() {
        // SAFETY: a registered handle is freed only by `register` after it
        // has been replaced and the unparker count was seen at 0 after the
        // replacement, or by drop; our increment keeps it alive until the
        // decrement below.
        let waiter = unsafe { &*waiter };
        waiter.in_use.with(|_| ());
        waiter.thread.unpark();
    }
    // Release: our use of the handle happens before a `register` that reads
    // the count after this decrement and frees it.
    header.unparkers.fetch_sub(1, Ordering::Release);
}

/// One rank's sending and receiving handle. `Send` (it may move to the thread
/// that uses it) but not `Sync`, not `Clone`: it is the only producer of the
/// lanes out of its rank and the only consumer of the lanes into it.
pub struct Endpoint<'a, T, C: Compact<T> = Whole> {
    boxes: &'a Mailboxes<T, C>,
    rank: Rank,
    /// Senders whose lanes may hold messages: bits taken from the doorbell
    /// and not yet found empty. Private, so keeping a bit costs no RMW.
    pending: Box<[u64]>,
    /// Number of set bits in `pending`.
    pending_count: u32,
    /// Where the round-robin scan of `pending` resumes: one past the lane
    /// served last.
    start: usize,
    /// The lane served last: polled directly when the doorbell is silent, so
    /// a message whose bit is not visible yet is not missed (and a
    /// ping-pong peer's reply is seen one cache line earlier).
    hint: Option<(Rank, &'a Lane<T, C>)>,
    /// The thread registered as this rank's waiter.
    registered: Option<thread::ThreadId>,
    /// Spin rounds of [`Endpoint::wait`] before it yields ([`SPINS`] unless
    /// set by [`Endpoint::set_spins`]).
    spins: u32,
    _not_sync: PhantomData<Cell<()>>,
}

impl<'a, T: Send, C: Compact<T>> Endpoint<'a, T, C> {
    /// This endpoint's rank.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Sets how many spin rounds (about 25-30 ns each) [`Endpoint::wait`]
    /// polls before it yields and parks. A thread alone on its core should
    /// spin long: in a virtual machine, waking a halted vCPU costs tens of
    /// microseconds (docs/mailbox.md). Under loom it stays 0.
    pub fn set_spins(&mut self, spins: u32) {
        if cfg!(not(loom)) {
            self.spins = spins;
        }
    }

    /// Makes the calling thread the one wakers unpark, now rather than at
    /// its first park (which registers it otherwise, allocating its handle):
    /// a thread that drives this endpoint for good calls this once, so that
    /// its waits allocate nothing later.
    pub fn register_thread(&mut self) {
        let me = thread::current();
        if self.registered != Some(me.id()) {
            self.registered = Some(me.id());
            self.boxes.headers[self.rank as usize].register(me);
        }
    }

    /// Sends `msg` to `to`. Never blocks: `Err(msg)` hands the value back
    /// when the lane is full. No allocation except on the very first send on
    /// a lane. Sending to oneself is allowed.
    ///
    /// # Panics
    ///
    /// If `to` is not a rank of the team.
    #[inline]
    pub fn send(&mut self, to: Rank, msg: T) -> Result<(), T> {
        let boxes = self.boxes;
        assert!(
            to < boxes.ranks,
            "send to rank {to} in a team of {}",
            boxes.ranks
        );
        let (from, to) = (self.rank as usize, to as usize);
        let lane = match boxes.lane(from, to) {
            Some(lane) => lane,
            None => boxes.create_lane(from, to),
        };
        // SAFETY: this endpoint is the only producer of lane (from -> to): it
        // is the only endpoint of `from` (taken flag), `&mut self` excludes a
        // concurrent send, and Endpoint is not Sync.
        unsafe { lane.push(msg) }?;
        fault_point::reach(FaultPoint::Published);
        let bell = boxes.bell(to, from / GROUP);
        let bit = 1 << (from % GROUP);
        // If our bit is still set, the receiver has not yet taken the ring
        // of an earlier message of ours (or leaves it set because it polls
        // this lane directly), and it will look at this lane after it swaps
        // the bit out: we need not ring again. That is a store (the push)
        // then a load (of the bell) against the receiver's swap then load
        // (of the stamp): the SeqCst fences here and after the receiver's
        // swaps (`refill`) order them. If this fence precedes the
        // receiver's, its stamp load sees the push; if the receiver's comes
        // first, our load sees its swap (bit clear) or later, and we ring.
        // Skipping the RMW keeps the doorbell's line unchanged, so a
        // receiver polling it keeps it cached.
        fence(Ordering::SeqCst);
        if bell.load(Ordering::Relaxed) & bit != 0 {
            return Ok(());
        }
        // AcqRel RMW: Release publishes the lane pointer (and orders the
        // push, which has its own Release) before the bit; and it is the
        // sender's half of the no-lost-wake-up pair: if the receiver's
        // pre-park swap of this word precedes this RMW in the word's
        // modification order (all writes to doorbell words are RMWs), this
        // RMW reads from it, so the receiver's `state = SLEEPING` happens
        // before the load below. Otherwise the receiver's swap sees our bit.
        bell.fetch_or(bit, Ordering::AcqRel);
        fault_point::reach(FaultPoint::Rung);
        wake_sleeper(&boxes.headers[to]);
        Ok(())
    }

    /// Takes one message, FIFO per sender, round-robin across senders (the
    /// scan resumes after the lane served last). Never blocks.
    pub fn try_recv(&mut self) -> Option<(Rank, T)> {
        let boxes = self.boxes;
        let me = self.rank as usize;
        let mut refilled = false;
        loop {
            let from = match self.find(self.start) {
                Some(from) => from,
                None => {
                    // End of a round: take the bits rung since, once per call.
                    if !refilled {
                        refilled = true;
                        self.refill(false);
                    }
                    match self.find(0) {
                        Some(from) => from,
                        None => break,
                    }
                }
            };
            let Some(lane) = boxes.lane(from, me) else {
                // Unreachable: a bit is rung only after its lane is installed.
                self.clear(from);
                continue;
            };
            // SAFETY: this endpoint is the only consumer of lane (from -> me):
            // it is the only endpoint of `me`, and `&mut self`, !Sync.
            match unsafe { lane.pop() } {
                Some(msg) => {
                    // SAFETY: as above (consumer).
                    if !unsafe { lane.has_next() } {
                        // A message pushed after this check rings the bell
                        // again, so dropping the bit loses nothing.
                        self.clear(from);
                    }
                    self.start = from + 1;
                    self.hint = Some((from as Rank, lane));
                    fault_point::reach(FaultPoint::Taken);
                    return Some((from as Rank, msg));
                }
                // Already drained (through the hint) or a stale bit.
                None => self.clear(from),
            }
        }
        // The doorbell is silent: the lane served last may hold a message
        // whose bit is not visible yet.
        if let Some((from, lane)) = self.hint {
            // SAFETY: as above (consumer of lane from -> me).
            if let Some(msg) = unsafe { lane.pop() } {
                fault_point::reach(FaultPoint::Taken);
                return Some((from, msg));
            }
        }
        None
    }

    /// Blocks until a message may be pending, [`Mailboxes::wake`] was called
    /// for this rank, or `deadline` passed. Spins briefly, then yields, then
    /// parks (`park_timeout` with a deadline). Spurious `Message` returns are
    /// possible (see [`Woke::Message`]); messages are not taken.
    ///
    /// # Panics
    ///
    /// Under loom, if `deadline` is `Some` (loom has no clock).
    pub fn wait(&mut self, deadline: Option<Instant>) -> Woke {
        // Ready at once: no clock read. Deadline passed: no spinning.
        if let Some(woke) = self.poll_ready() {
            return woke;
        }
        if !expired(deadline) {
            if let Some(woke) = self.spin() {
                return woke;
            }
        }
        self.block(deadline)
    }

    /// The first, clock-free stage of [`wait`](Endpoint::wait): polls the
    /// spin count times (with a `spin_loop` between polls). `Some` as soon
    /// as a message may be pending or a wake-up came, `None` otherwise. A
    /// caller with bookkeeping to do before a longer wait (reading the clock
    /// costs tens of nanoseconds) spins first and does it only on `None`.
    #[cfg_attr(loom, allow(clippy::reversed_empty_ranges))] // SPINS = 0
    pub fn spin(&mut self) -> Option<Woke> {
        if let Some(woke) = self.poll_ready() {
            return Some(woke);
        }
        for _ in 0..self.spins {
            sync::spin_loop();
            if let Some(woke) = self.poll_ready() {
                return Some(woke);
            }
        }
        None
    }

    /// The later stages of [`wait`](Endpoint::wait), without its spinning:
    /// yields a few times, then parks until a message may be pending, a
    /// wake-up, or `deadline`.
    ///
    /// # Panics
    ///
    /// Under loom, if `deadline` is `Some` (loom has no clock).
    #[cfg_attr(loom, allow(clippy::reversed_empty_ranges))] // YIELDS = 0
    pub fn block(&mut self, deadline: Option<Instant>) -> Woke {
        #[cfg(loom)]
        assert!(deadline.is_none(), "wait: loom has no clock, pass None");
        if let Some(woke) = self.poll_ready() {
            return woke;
        }
        if expired(deadline) {
            return Woke::Timeout;
        }
        for _ in 0..YIELDS {
            if expired(deadline) {
                return Woke::Timeout;
            }
            thread::yield_now();
            if let Some(woke) = self.poll_ready() {
                return woke;
            }
        }
        self.park(deadline)
    }

    /// The doorbell's slow path: announce, re-check, park.
    #[cold]
    fn park(&mut self, deadline: Option<Instant>) -> Woke {
        // Registered before `state = SLEEPING`, so a sender that sees
        // SLEEPING finds this thread (the Release swap of the pointer is
        // sequenced before the probe's Release RMWs).
        self.register_thread();
        let boxes = self.boxes;
        let header = &boxes.headers[self.rank as usize];
        // Relaxed: published by the Release half of the RMWs in `probe`,
        // which are sequenced after this store.
        header.state.store(SLEEPING, Ordering::Relaxed);
        let woke = loop {
            if let Some(woke) = self.probe() {
                break woke;
            }
            match deadline {
                None => {
                    header.parking();
                    thread::park();
                }
                #[cfg(not(loom))]
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break Woke::Timeout;
                    }
                    header.parking();
                    thread::park_timeout(deadline - now);
                }
                #[cfg(loom)]
                Some(_) => unreachable!("checked in wait"),
            }
            // Woken by a sender, a waker, a stale unpark, a timeout or
            // spuriously: `probe` tells which. `state` stays SLEEPING
            // meanwhile, so every ring after our last probe unparks us.
        };
        // Relaxed: senders that still see SLEEPING merely unpark us once more
        // (a stale token makes one later park return early, harmlessly).
        header.state.store(RUNNING, Ordering::Relaxed);
        woke
    }

    /// The receiver's half of the no-lost-wake-up pair, after `state =
    /// SLEEPING`: read-modify-writes of the notification flag and of every
    /// doorbell word. Their Release half publishes SLEEPING to any sender or
    /// waker whose RMW comes later in that word's modification order; an RMW
    /// always reads the latest value, so any earlier ring is seen here.
    fn probe(&mut self) -> Option<Woke> {
        let header = &self.boxes.headers[self.rank as usize];
        if header.notified.swap(false, Ordering::AcqRel) {
            return Some(Woke::Notified);
        }
        self.refill(true);
        (self.pending_count > 0).then_some(Woke::Message)
    }

    /// Cheap readiness check for the spinning and yielding phases: plain
    /// loads, an RMW only to take a notification.
    #[inline]
    fn poll_ready(&mut self) -> Option<Woke> {
        let boxes = self.boxes;
        let me = self.rank as usize;
        let header = &boxes.headers[me];
        // Relaxed load first (no RMW on the common path); the Acquire swap
        // takes the notification and orders what the waker did before it.
        if header.notified.load(Ordering::Relaxed) && header.notified.swap(false, Ordering::Acquire)
        {
            return Some(Woke::Notified);
        }
        if self.pending_count > 0 {
            return Some(Woke::Message);
        }
        // Relaxed: a hint; try_recv takes the bits with an Acquire swap.
        if (0..boxes.words).any(|w| {
            let word = boxes.bell(me, w).load(Ordering::Relaxed);
            word != 0 && word != self.hint_bit(w)
        }) {
            return Some(Woke::Message);
        }
        if let Some((_, lane)) = self.hint {
            // SAFETY: this endpoint is the only consumer of the hint lane.
            if unsafe { lane.has_next() } {
                return Some(Woke::Message);
            }
        }
        None
    }

    /// Moves the doorbell's bits into `pending`. `probe`: this is the
    /// pre-park re-check, whose swaps must happen (and be AcqRel).
    #[inline]
    fn refill(&mut self, probe: bool) {
        let boxes = self.boxes;
        let me = self.rank as usize;
        for w in 0..self.pending.len() {
            let bell = boxes.bell(me, w);
            // The swap is an RMW, so it must happen in the probe even when a
            // plain load says 0 (it is the synchronization point). Outside
            // the probe a Relaxed load comes first: a word that is 0, or
            // holds only the hint lane's bit, is left alone (`try_recv`
            // polls the hint lane directly). That spares the receiver an RMW
            // on a line that senders write (an RMW stalls for a whole
            // cross-core transfer), and a bit left set spares its sender the
            // ring (see `send`): in a steady exchange the doorbell's line
            // does not move at all.
            if !probe {
                let word = bell.load(Ordering::Relaxed);
                if word == 0 || word == self.hint_bit(w) {
                    continue;
                }
            }
            // Acquire (and Release in the probe): reads from the senders'
            // AcqRel fetch_or, so the lanes they installed are visible.
            let order = if probe {
                Ordering::AcqRel
            } else {
                Ordering::Acquire
            };
            let bits = bell.swap(0, order);
            if bits != 0 {
                // Pairs with the fence in `send` (between its push and its
                // look at the bell): a sender that saw a bit we just took
                // did not ring again, and its push must be visible to our
                // later look at its lane.
                fence(Ordering::SeqCst);
            }
            let pending = &mut self.pending[w];
            let new = bits & !*pending;
            *pending |= new;
            self.pending_count += new.count_ones();
        }
        if probe {
            // A stale bit of the idle hint lane (rung for a message the hint
            // path took) would end the park at once for nothing. The swap
            // and fence above make every push whose sender saw the bit set
            // (rang or not) visible to `has_next`: an idle hint lane's bit
            // is stale indeed.
            if let Some((from, _)) = self.hint {
                let w = from as usize / GROUP;
                // SAFETY: this endpoint is the only consumer of the hint lane.
                let idle = self
                    .hint
                    .is_some_and(|(_, lane)| !unsafe { lane.has_next() });
                if idle && self.pending[w] & self.hint_bit(w) != 0 {
                    self.clear(from as usize);
                }
            }
        }
    }

    /// The doorbell bit of the hint lane if it is in word `w`, else 0. A
    /// word holding only this bit is left in the doorbell: the hint lane is
    /// polled directly anyway (by `try_recv` and `wait`), so its messages are
    /// seen there, and the pre-park probe swaps the bit out.
    #[inline]
    fn hint_bit(&self, w: usize) -> u64 {
        match self.hint {
            Some((from, _)) if from as usize / GROUP == w => 1 << (from as usize % GROUP),
            _ => 0,
        }
    }

    /// The first pending sender at or after `from`.
    #[inline]
    fn find(&self, from: usize) -> Option<usize> {
        if self.pending_count == 0 {
            return None;
        }
        let mut w = from / GROUP;
        let mut bits = *self.pending.get(w)? & (!0u64 << (from % GROUP));
        loop {
            if bits != 0 {
                return Some(w * GROUP + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.pending.get(w)?;
        }
    }

    #[inline]
    fn clear(&mut self, from: usize) {
        let bit = 1u64 << (from % GROUP);
        let word = &mut self.pending[from / GROUP];
        if *word & bit != 0 {
            *word &= !bit;
            self.pending_count -= 1;
        }
    }
}

impl<T, C: Compact<T>> Drop for Endpoint<'_, T, C> {
    fn drop(&mut self) {
        let boxes = self.boxes;
        let me = self.rank as usize;
        // Give the pending bits back to the doorbell (an RMW, as every write
        // to a doorbell word must be), so the next endpoint of this rank
        // serves those lanes.
        for (w, &bits) in self.pending.iter().enumerate() {
            if bits != 0 {
                boxes.bell(me, w).fetch_or(bits, Ordering::Release);
            }
        }
        let header = &boxes.headers[me];
        // The waiter stays registered: a late unpark of this thread is
        // harmless, and the next endpoint re-registers on its first park.
        // Release: pairs with the Acquire in `Mailboxes::endpoint`.
        header.taken.store(false, Ordering::Release);
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

impl<T, C: Compact<T>> std::fmt::Debug for Endpoint<'_, T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("rank", &self.rank)
            .field("pending", &self.pending_count)
            .finish_non_exhaustive()
    }
}

/// True if `deadline` has passed.
fn expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}
