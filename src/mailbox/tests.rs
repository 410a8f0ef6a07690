use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use super::*;

fn assert_send<S: Send>() {}

#[test]
fn endpoint_is_send_and_mailboxes_sync() {
    assert_send::<Endpoint<'static, u64>>();
    fn assert_sync<S: Sync>() {}
    assert_sync::<Mailboxes<u64>>();
    assert_send::<Mailboxes<u64>>();
}

#[test]
fn capacity_is_a_power_of_two_at_least_two() {
    for (asked, got) in [(0, 2), (1, 2), (2, 2), (3, 4), (5, 8), (64, 64), (65, 128)] {
        assert_eq!(
            Mailboxes::<u8>::new(2, asked).lane_capacity(),
            got,
            "asked {asked}"
        );
    }
}

#[test]
fn one_endpoint_per_rank_returned_on_drop() {
    let boxes = Mailboxes::<u8>::new(3, 4);
    assert_eq!(boxes.ranks(), 3);
    let a = boxes.endpoint(1).unwrap();
    assert_eq!(a.rank(), 1);
    assert!(boxes.endpoint(1).is_none());
    assert!(boxes.endpoint(3).is_none());
    assert!(boxes.endpoint(u32::MAX).is_none());
    drop(a);
    assert!(boxes.endpoint(1).is_some());
}

#[test]
fn fifo_per_lane() {
    let boxes = Mailboxes::new(2, 16);
    let mut a = boxes.endpoint(0).unwrap();
    let mut b = boxes.endpoint(1).unwrap();
    for round in 0..10u32 {
        for i in 0..16 {
            a.send(1, round * 100 + i).unwrap();
        }
        for i in 0..16 {
            assert_eq!(b.try_recv(), Some((0, round * 100 + i)));
        }
        assert_eq!(b.try_recv(), None);
    }
    assert_eq!(a.try_recv(), None);
}

#[test]
fn full_lane_returns_the_value() {
    let boxes = Mailboxes::new(2, 3); // rounds to 4
    let mut a = boxes.endpoint(0).unwrap();
    let mut b = boxes.endpoint(1).unwrap();
    for i in 0..4 {
        a.send(1, format!("m{i}")).unwrap();
    }
    assert_eq!(a.send(1, "extra".to_string()), Err("extra".to_string()));
    assert_eq!(b.try_recv(), Some((0, "m0".to_string())));
    a.send(1, "m4".to_string()).unwrap();
    assert_eq!(a.send(1, "again".to_string()), Err("again".to_string()));
    let got: Vec<_> = std::iter::from_fn(|| b.try_recv())
        .map(|(_, m)| m)
        .collect();
    assert_eq!(got, ["m1", "m2", "m3", "m4"]);
}

#[test]
fn lanes_are_created_lazily() {
    let boxes = Mailboxes::new(1024, 8);
    assert!(boxes.groups.iter().all(|g| g.load(SeqCst).is_null()));
    let mut a = boxes.endpoint(5).unwrap();
    let mut b = boxes.endpoint(700).unwrap();
    a.send(700, 1u8).unwrap();
    assert!(boxes.lane(5, 700).is_some());
    assert!(boxes.lane(700, 5).is_none());
    assert!(boxes.lane(6, 700).is_none(), "same group, other sender");
    let groups = boxes
        .groups
        .iter()
        .filter(|g| !g.load(SeqCst).is_null())
        .count();
    assert_eq!(groups, 1);
    assert_eq!(b.try_recv(), Some((5, 1)));
    b.send(5, 2).unwrap();
    assert!(boxes.lane(700, 5).is_some());
    assert_eq!(a.try_recv(), Some((700, 2)));
}

#[test]
fn send_to_self() {
    let boxes = Mailboxes::new(1, 2);
    let mut a = boxes.endpoint(0).unwrap();
    a.send(0, 7).unwrap();
    a.send(0, 8).unwrap();
    assert_eq!(a.send(0, 9), Err(9));
    assert_eq!(a.wait(None), Woke::Message);
    assert_eq!(a.try_recv(), Some((0, 7)));
    assert_eq!(a.try_recv(), Some((0, 8)));
    assert_eq!(a.try_recv(), None);
}

#[test]
#[should_panic(expected = "send to rank 2")]
fn send_out_of_range_panics() {
    let boxes = Mailboxes::new(2, 2);
    let mut a = boxes.endpoint(0).unwrap();
    let _ = a.send(2, 0u8);
}

#[test]
fn fair_between_two_senders() {
    let boxes = Mailboxes::new(3, 8);
    let mut rx = boxes.endpoint(0).unwrap();
    let mut s1 = boxes.endpoint(1).unwrap();
    let mut s2 = boxes.endpoint(2).unwrap();
    for i in 0..6 {
        s1.send(0, (1, i)).unwrap();
        s2.send(0, (2, i)).unwrap();
    }
    let order: Vec<u32> = std::iter::from_fn(|| rx.try_recv())
        .map(|(from, _)| from)
        .collect();
    assert_eq!(order, [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
    // A low rank that keeps sending does not starve a high one, and a lane
    // rung in the middle of a round is served in the next.
    for i in 0..3 {
        s1.send(0, (1, i)).unwrap();
    }
    assert_eq!(rx.try_recv().map(|(f, _)| f), Some(1));
    s2.send(0, (2, 0)).unwrap();
    let order: Vec<u32> = std::iter::from_fn(|| rx.try_recv())
        .map(|(from, _)| from)
        .collect();
    assert_eq!(order, [1, 2, 1]);
}

#[test]
fn fair_across_doorbell_words() {
    // Senders in three different doorbell words (and lane groups).
    let boxes = Mailboxes::new(200, 8);
    let mut rx = boxes.endpoint(100).unwrap();
    let senders = [0u32, 63, 64, 130, 199];
    let mut eps: Vec<_> = senders
        .iter()
        .map(|&r| boxes.endpoint(r).unwrap())
        .collect();
    for i in 0..3u32 {
        for ep in eps.iter_mut() {
            ep.send(100, i).unwrap();
        }
    }
    let got: Vec<(u32, u32)> = std::iter::from_fn(|| rx.try_recv()).collect();
    let expect: Vec<(u32, u32)> = (0..3)
        .flat_map(|i| senders.iter().map(move |&s| (s, i)))
        .collect();
    assert_eq!(got, expect);
}

#[test]
fn wake_before_wait_returns_at_once() {
    let boxes = Mailboxes::<u8>::new(2, 2);
    let mut a = boxes.endpoint(0).unwrap();
    boxes.wake(0);
    boxes.wake(7); // out of range: ignored
    assert_eq!(a.wait(None), Woke::Notified);
    let t = Instant::now();
    assert_eq!(a.wait(Some(t + Duration::from_millis(5))), Woke::Timeout);
}

/// Polls until `rank`'s endpoint has parked more than `since` times
/// (`Header::parks`): it has announced SLEEPING, its last probe found
/// nothing, and from now on only an unpark wakes it. The Acquire load pairs
/// with the count's Release increment, so the caller's next ring or wake
/// reads SLEEPING and unparks. False if that has not happened within 20 s.
fn parked_more_than<T>(boxes: &Mailboxes<T>, rank: Rank, since: u32) -> bool {
    let parks = &boxes.headers[rank as usize].parks;
    let t = Instant::now();
    while parks.load(Ordering::Acquire) <= since {
        if t.elapsed() > Duration::from_secs(20) {
            return false;
        }
        thread::yield_now();
    }
    true
}

/// How many times `rank`'s endpoint has parked so far.
fn parks<T>(boxes: &Mailboxes<T>, rank: Rank) -> u32 {
    boxes.headers[rank as usize].parks.load(Ordering::Acquire)
}

/// The thread registered as the waiter of `ep`'s rank, if any.
fn registered_thread<T>(ep: &Endpoint<'_, T>) -> Option<thread::ThreadId> {
    let waiter = ep.boxes.headers[ep.rank as usize]
        .waiter
        .load(Ordering::Acquire);
    // SAFETY: a registered handle is freed only by its rank's endpoint (in
    // `register`, after replacing it, which needs `&mut` of the endpoint) or
    // by dropping the Mailboxes. `ep` is that endpoint, borrowed shared for
    // this whole function, and it borrows the Mailboxes.
    (!waiter.is_null()).then(|| unsafe { &*waiter }.thread.id())
}

#[test]
fn wake_wakes_a_parked_endpoint() {
    let boxes = Mailboxes::<u8>::new(2, 2);
    thread::scope(|s| {
        let mut a = boxes.endpoint(0).unwrap();
        let waiter = s.spawn(move || a.wait(None));
        // Wait until the waiter is parked (past spinning, yielding and its
        // last probe), then wake it. Wake in any case, so that a failure
        // cannot leave the waiter parked and the test hanging.
        let parked = parked_more_than(&boxes, 0, 0);
        boxes.wake(0);
        assert_eq!(waiter.join().unwrap(), Woke::Notified);
        assert!(parked, "the waiter never parked");
    });
    assert_eq!(boxes.headers[0].state.load(SeqCst), RUNNING);
}

#[test]
fn wait_with_deadline_times_out() {
    let boxes = Mailboxes::<u8>::new(2, 2);
    let mut a = boxes.endpoint(0).unwrap();
    for ms in [0, 1, 30] {
        let t = Instant::now();
        assert_eq!(a.wait(Some(t + Duration::from_millis(ms))), Woke::Timeout);
        let elapsed = t.elapsed();
        assert!(elapsed >= Duration::from_millis(ms), "{elapsed:?}");
        assert!(elapsed < Duration::from_millis(ms + 500), "{elapsed:?}");
    }
}

#[test]
fn a_message_wakes_a_parked_endpoint() {
    let boxes = Mailboxes::new(2, 2);
    thread::scope(|s| {
        let mut b = boxes.endpoint(1).unwrap();
        let receiver = s.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            let woke = b.wait(Some(deadline));
            (woke, b.try_recv())
        });
        // Send only once the receiver is parked: then only the sender's
        // unpark can wake it before its deadline. Send in any case, so the
        // receiver does not wait out its deadline when the check fails.
        let parked = parked_more_than(&boxes, 1, 0);
        boxes.endpoint(0).unwrap().send(1, 5u64).unwrap();
        assert_eq!(receiver.join().unwrap(), (Woke::Message, Some((0, 5))));
        assert!(parked, "the receiver never parked");
    });
}

#[test]
fn endpoint_moves_between_threads() {
    // Parks on one thread (registering it), then moves to another and parks
    // there: the sender must unpark the new thread.
    let boxes = Mailboxes::new(2, 4);
    let mut b = boxes.endpoint(1).unwrap();
    thread::scope(|s| {
        let first;
        (b, first) = s
            .spawn(|| {
                // Short waits until one of them has parked (a thread
                // descheduled past the deadline times out before it parks).
                let t = Instant::now();
                while parks(&boxes, 1) == 0 && t.elapsed() < Duration::from_secs(20) {
                    let deadline = Instant::now() + Duration::from_millis(20);
                    assert_eq!(b.wait(Some(deadline)), Woke::Timeout);
                }
                (b, thread::current().id())
            })
            .join()
            .unwrap();
        let parked_first = parks(&boxes, 1);
        assert!(parked_first > 0, "the first thread never parked");
        assert_eq!(registered_thread(&b), Some(first));
        let receiver = s.spawn(move || {
            let woke = b.wait(None);
            (
                woke,
                b.try_recv(),
                registered_thread(&b),
                thread::current().id(),
            )
        });
        // Send once the endpoint has parked on its new thread (it registers
        // that thread before it announces SLEEPING), and in any case: a
        // receiver left parked would hang the test.
        let parked = parked_more_than(&boxes, 1, parked_first);
        let mut a = boxes.endpoint(0).unwrap();
        a.send(1, 9u32).unwrap();
        let (woke, got, registered, second) = receiver.join().unwrap();
        assert_eq!((woke, got), (Woke::Message, Some((0, 9))));
        assert!(parked, "the endpoint never parked on its second thread");
        assert_ne!(first, second);
        assert_eq!(registered, Some(second), "the new thread is the waiter");
    });
}

/// Sends with retries, yielding while the lane is full.
fn send_all<T: Send>(ep: &mut Endpoint<'_, T>, to: Rank, mut msg: T) {
    loop {
        match ep.send(to, msg) {
            Ok(()) => return,
            Err(back) => {
                msg = back;
                thread::yield_now();
            }
        }
    }
}

#[test]
fn many_senders_one_receiver_lose_and_duplicate_nothing() {
    const SENDERS: u32 = 32;
    const PER: u64 = 5_000;
    let boxes = Mailboxes::new(SENDERS + 1, 8);
    thread::scope(|s| {
        for r in 1..=SENDERS {
            let mut ep = boxes.endpoint(r).unwrap();
            s.spawn(move || {
                for i in 0..PER {
                    send_all(&mut ep, 0, (r as u64) << 32 | i);
                }
            });
        }
        let mut rx = boxes.endpoint(0).unwrap();
        let mut next = vec![0u64; SENDERS as usize + 1];
        let mut total = 0;
        while total < SENDERS as u64 * PER {
            match rx.try_recv() {
                Some((from, msg)) => {
                    assert_eq!(msg >> 32, from as u64);
                    assert_eq!(msg & 0xffff_ffff, next[from as usize], "FIFO from {from}");
                    next[from as usize] += 1;
                    total += 1;
                }
                None => {
                    let woke = rx.wait(Some(Instant::now() + Duration::from_secs(10)));
                    assert_ne!(woke, Woke::Timeout, "stuck at {total}");
                }
            }
        }
        assert!(next[1..].iter().all(|&n| n == PER));
        assert_eq!(rx.try_recv(), None);
    });
}

#[test]
fn all_to_all_among_16_ranks_loses_and_duplicates_nothing() {
    const RANKS: u32 = 16;
    const PER: u32 = 500; // per ordered pair
    let boxes = Mailboxes::new(RANKS, 4);
    let barrier = Barrier::new(RANKS as usize);
    thread::scope(|s| {
        for r in 0..RANKS {
            let mut ep = boxes.endpoint(r).unwrap();
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                // Next message to send to each peer, next expected from each.
                let mut sent = vec![0u32; RANKS as usize];
                let mut seen = vec![0u32; RANKS as usize];
                let mut received = 0;
                let mut done_sending = false;
                while received < RANKS * PER || !done_sending {
                    let mut progress = false;
                    done_sending = true;
                    for to in 0..RANKS {
                        let i = sent[to as usize];
                        if i == PER {
                            continue;
                        }
                        done_sending = false;
                        if ep.send(to, (r, i)).is_ok() {
                            sent[to as usize] += 1;
                            progress = true;
                        }
                    }
                    while let Some((from, (tag, i))) = ep.try_recv() {
                        assert_eq!(tag, from);
                        assert_eq!(i, seen[from as usize], "FIFO {from} -> {r}");
                        seen[from as usize] += 1;
                        received += 1;
                        progress = true;
                    }
                    if !progress {
                        let woke = ep.wait(Some(Instant::now() + Duration::from_millis(1)));
                        let _ = woke;
                    }
                }
                assert!(seen.iter().all(|&n| n == PER));
            });
        }
    });
}

#[test]
fn drop_frees_undelivered_messages_and_lanes() {
    #[derive(Debug)]
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let boxes = Mailboxes::new(130, 4);
    let mut sent = 0;
    {
        let mut eps: Vec<_> = (0..130).map(|r| boxes.endpoint(r).unwrap()).collect();
        for from in [0usize, 1, 64, 129] {
            for to in [0u32, 5, 129] {
                for _ in 0..3 {
                    eps[from].send(to, Counted(drops.clone())).unwrap();
                    sent += 1;
                }
            }
        }
        // Receive a few (wrapping the ring for some lanes), leave the rest.
        let mut got = 0;
        for _ in 0..5 {
            drop(eps[5].try_recv().unwrap());
            got += 1;
        }
        eps[0].send(5, Counted(drops.clone())).unwrap();
        sent += 1;
        assert_eq!(drops.load(SeqCst), got);
    }
    drop(boxes);
    assert_eq!(drops.load(SeqCst), sent);
}

#[test]
fn a_dropped_endpoint_hands_its_pending_lanes_on() {
    let boxes = Mailboxes::new(3, 4);
    let mut a = boxes.endpoint(0).unwrap();
    let mut b = boxes.endpoint(1).unwrap();
    for i in 0..3 {
        a.send(2, i).unwrap();
        b.send(2, 10 + i).unwrap();
    }
    let mut c = boxes.endpoint(2).unwrap();
    assert_eq!(c.try_recv(), Some((0, 0)));
    drop(c); // lanes 0 -> 2 and 1 -> 2 still pending, their bits taken
    let mut c = boxes.endpoint(2).unwrap();
    let got: HashSet<(u32, i32)> = std::iter::from_fn(|| c.try_recv()).collect();
    assert_eq!(
        got,
        HashSet::from([(0, 1), (0, 2), (1, 10), (1, 11), (1, 12)])
    );
}

/// A value that counts its drops; those without a tracker travel in the
/// one-line form of [`Tracked`]'s codec.
#[derive(Debug)]
struct Tracked(u64, Option<Arc<AtomicUsize>>);

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(drops) = &self.1 {
            drops.fetch_add(1, SeqCst);
        }
    }
}

/// Compacts untracked values, and counts how many it expands.
struct Untracked;

static EXPANDED: AtomicUsize = AtomicUsize::new(0);

impl Compact<Tracked> for Untracked {
    type Small = u64;
    fn compact(value: &Tracked) -> Option<u64> {
        value.1.is_none().then_some(value.0)
    }
    fn expand(small: u64) -> Tracked {
        EXPANDED.fetch_add(1, SeqCst);
        Tracked(small, None)
    }
}

#[test]
fn small_and_whole_forms_interleave_in_order_and_whole_ones_drop_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let boxes = Mailboxes::<Tracked, Untracked>::with_codec(2, 4);
    let mut a = boxes.endpoint(0).unwrap();
    let mut b = boxes.endpoint(1).unwrap();
    let before = EXPANDED.load(SeqCst);
    // Past the ring's end several times, in every mix of the two forms.
    let (mut sent, mut got) = (0u64, 0u64);
    for round in 0..20u64 {
        for _ in 0..(round % 4 + 1) {
            let tracker = (sent % 3 == 0).then(|| drops.clone());
            a.send(1, Tracked(sent, tracker)).unwrap();
            sent += 1;
        }
        while let Some((from, value)) = b.try_recv() {
            assert_eq!((from, value.0), (0, got));
            assert_eq!(value.1.is_some(), got % 3 == 0, "message {got}");
            got += 1;
        }
    }
    assert_eq!(got, sent);
    let whole = sent.div_ceil(3) as usize;
    assert_eq!(EXPANDED.load(SeqCst) - before, sent as usize - whole);
    assert_eq!(
        drops.load(SeqCst),
        whole,
        "each received whole value drops once"
    );
    // Undelivered: two whole values and a small one, dropped with the boxes.
    for x in [0, 1, 3] {
        let tracker = (x != 1).then(|| drops.clone());
        a.send(1, Tracked(x, tracker)).unwrap();
    }
    drop((a, b));
    drop(boxes);
    assert_eq!(drops.load(SeqCst), whole + 2);
    assert_eq!(Arc::strong_count(&drops), 1, "nothing leaked");
}
