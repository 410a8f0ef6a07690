//! The engine-neutral driver, tested alone over the deterministic in-memory
//! transport (`driver::memory`): one rank driven, the others played by the
//! test, time virtual (it moves only when the driver reads or waits).

use corrected::driver::memory::{MemoryNet, MemoryTransport};
use corrected::driver::{Driver, DriverConfig};
use corrected::protocol::bcast::{Bcast, BcastPlan, Correction};
use corrected::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use corrected::topology::Tree;
use corrected::topology::TreeSpec;
use corrected::types::{Collective, LogP, Rank, Tick};
use corrected::Error;

/// A core with a timed phase, like gossip: from its start it sends to rank
/// 1 until time `until`, one message per poll; its output is the number of
/// messages it sent. It stops at a cap so that a driver that breaks the
/// contract fails the test instead of hanging it.
struct SendUntil {
    until: Tick,
    cap: u32,
    sent: u32,
    times: Vec<Tick>,
    done: bool,
}

impl SendUntil {
    fn new(until: Tick) -> Self {
        SendUntil {
            until,
            cap: 1_000_000,
            sent: 0,
            times: Vec::new(),
            done: false,
        }
    }
}

impl Protocol for SendUntil {
    type Payload = u64;
    type Output = u32;

    fn handle(&mut self, _now: Tick, _event: Event<Msg<u64>>) {}

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<u64>>> {
        if self.done || now >= self.until || self.sent == self.cap {
            self.done = true;
            return None;
        }
        self.sent += 1;
        if self.times.len() < 4096 {
            self.times.push(now);
        }
        Some(Transmit {
            to: 1,
            msg: Msg {
                op: 0,
                kind: Collective::Broadcast,
                root: 0,
                tag: Tag::Tree,
                payload: now,
            },
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<u32> {
        self.done.then_some(self.sent)
    }

    fn is_quiescent(&self) -> bool {
        self.done
    }

    fn header(&self) -> Header {
        Header {
            op: 0,
            kind: Collective::Broadcast,
            root: Some(0),
        }
    }

    fn may_return(&self) -> Leave {
        if self.done {
            Leave::Now
        } else {
            Leave::Not
        }
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn uses_time(&self) -> bool {
        true
    }
}

/// A regression: the driver must advance `now` between the sends of a
/// core that uses time, so a core that sends "until time T" stops. Before
/// the fix it drained such a core at one fixed `now`: it stopped only at
/// its cap of 10^6 sends.
#[test]
fn a_core_that_sends_until_a_time_stops_at_that_time() {
    let net = MemoryNet::<u64>::new(2, 1, 1 << 21);
    let mut driver = Driver::new(net.transport(0), DriverConfig::default());
    let op = driver.enter().unwrap();
    let mut core = SendUntil::new(1_000);
    let sent = driver.drive(op, None, &mut core).unwrap();
    assert!(
        (1..2_000).contains(&sent),
        "{sent} sends: time did not advance between them"
    );
    assert!(
        core.times.windows(2).all(|w| w[0] < w[1]),
        "each send sees a later now"
    );
    assert_eq!(net.take_sent().len(), sent as usize);
}

fn plan(procs: u32) -> BcastPlan {
    let tree = Tree::build(TreeSpec::binomial(), procs, LogP::PAPER).unwrap();
    BcastPlan::new(tree, Correction::Checked, 0)
}

fn msg(op: u32, kind: Collective, root: Rank, tag: Tag, payload: u64) -> Msg<u64> {
    Msg {
        op,
        kind,
        root,
        tag,
        payload,
    }
}

/// Four ranks over the memory network, their plan, and rank `rank`'s driver.
fn four_ranks<'t>(
    rank: Rank,
    config: DriverConfig,
) -> (MemoryNet<u64>, BcastPlan, Driver<'t, MemoryTransport<u64>>) {
    let net = MemoryNet::new(4, 1, 64);
    let driver = Driver::new(net.transport(rank), config);
    (net, plan(4), driver)
}

/// A message of the current operation from another collective ends the
/// call with a mismatch that names both calls; it does not wait for the
/// timeout.
#[test]
fn a_message_of_another_collective_is_a_mismatch() {
    let (net, plan, mut driver) = four_ranks(2, DriverConfig::default());
    let op = driver.enter().unwrap();
    net.inject(1, 2, msg(op, Collective::Reduce, 1, Tag::Upward, 7));
    let mut core = Bcast::new(&plan, 1, 2, op, None).unwrap();
    let err = driver.drive(op, None, &mut core).unwrap_err();
    match err {
        Error::Mismatch {
            op: 0,
            mine,
            theirs,
        } => {
            assert_eq!(mine, "broadcast from 1");
            assert_eq!(theirs, "reduce to 1");
        }
        other => panic!("{other:?}"),
    }
    assert!(net.clock() < 1_000_000, "at once, not after a timeout");
}

/// Nobody plays the root: the call times out after the operation timeout
/// of virtual time, never hangs.
#[test]
fn a_silent_root_times_out() {
    let config = DriverConfig {
        op_timeout: 5_000_000,
        ..DriverConfig::default()
    };
    let (net, plan, mut driver) = four_ranks(3, config);
    let op = driver.enter().unwrap();
    let mut core = Bcast::<u64>::new(&plan, 0, 3, op, None).unwrap();
    let err = driver.drive(op, None, &mut core).unwrap_err();
    assert!(matches!(err, Error::Timeout { op: 0, .. }), "{err:?}");
    assert!(net.clock() >= 5_000_000, "waited the whole timeout");
}

/// A long wait costs few wake-ups: nothing arriving, each wait is twice
/// the last, up to a sixteenth of the failure timeout (1 ms, 2 ms, ...,
/// 62.5 ms). Here the silent root is taken for absent after one 2 s
/// operation timeout and the call waits one more: 4 s of waiting take
/// about 70 waits, where waits of `max_sleep` (1 ms) would take 4 000.
#[test]
fn a_long_wait_backs_off_to_a_sixteenth_of_the_failure_timeout() {
    let config = DriverConfig {
        op_timeout: 2_000_000_000,
        ..DriverConfig::default()
    };
    let (net, plan, mut driver) = four_ranks(3, config);
    let op = driver.enter().unwrap();
    let mut core = Bcast::<u64>::new(&plan, 0, 3, op, None).unwrap();
    let err = driver.drive(op, None, &mut core).unwrap_err();
    let waited = net.clock();
    assert!(waited >= 2_000_000_000, "{err:?} before the timeout");
    // A wait at the cap for each sixteenth of the failure timeout waited,
    // and the few shorter ones before it (1 to 32 ms) and at each end.
    let least = waited / (config.failure_timeout / 16);
    let waits = net.waits(3);
    assert!(
        (least..least + 16).contains(&waits),
        "{waits} waits in {waited} ns: {err:?}"
    );
}

/// Fencing: a message of the next operation that comes early waits until
/// the rank gets there; an old operation's message goes to its lingering
/// core, here a root that still has correction to send.
#[test]
fn early_messages_wait_and_kept_cores_are_served() {
    let (net, plan, mut driver) = four_ranks(1, DriverConfig::default());
    // Operation 1's tree message from root 0 comes during operation 0.
    net.inject(0, 1, msg(1, Collective::Broadcast, 0, Tag::Tree, 11));
    let op0 = driver.enter().unwrap();
    let mut root = Bcast::new(&plan, 1, 1, op0, Some(10)).unwrap();
    assert_eq!(driver.drive(op0, None, &mut root), Ok(10));
    let sent: Vec<_> = net
        .take_sent()
        .into_iter()
        .map(|(_, to, m)| (to, m.tag))
        .collect();
    assert!(sent.contains(&(2, Tag::Tree)), "{sent:?}");
    driver.keep(root);
    let op1 = driver.enter().unwrap();
    let mut core = Bcast::<u64>::new(&plan, 0, 1, op1, None).unwrap();
    assert_eq!(
        driver.drive(op1, None, &mut core),
        Ok(11),
        "the held message"
    );
    // Rank 2's correction to the root of operation 0 reaches its kept core
    // without a mismatch in operation 1.
    net.inject(2, 1, msg(op0, Collective::Broadcast, 1, Tag::Leftward, 10));
    let op2 = driver.enter().unwrap();
    net.inject(0, 1, msg(op2, Collective::Broadcast, 0, Tag::Tree, 12));
    let mut core = Bcast::<u64>::new(&plan, 0, 1, op2, None).unwrap();
    assert_eq!(driver.drive(op2, None, &mut core), Ok(12));
}

/// Zombies stay out: once the driver has handed a rank's failure to its
/// cores, that rank's messages are dropped (a rank declared failed while
/// only slow may wake and send). Here rank 1 is declared failed during
/// operation 0; in operation 1 it sends rank 3 a wrong value before the
/// root's message comes, and rank 3 must deliver the root's.
#[test]
fn a_rank_known_failed_is_not_heard() {
    let (net, plan, mut driver) = four_ranks(3, DriverConfig::default());
    let op0 = driver.enter().unwrap();
    net.fail(1);
    net.inject(0, 3, msg(op0, Collective::Broadcast, 0, Tag::Tree, 10));
    let mut core = Bcast::<u64>::new(&plan, 0, 3, op0, None).unwrap();
    assert_eq!(driver.drive(op0, None, &mut core), Ok(10));
    let op1 = driver.enter().unwrap();
    net.inject(1, 3, msg(op1, Collective::Broadcast, 0, Tag::Tree, 99));
    net.inject(0, 3, msg(op1, Collective::Broadcast, 0, Tag::Tree, 11));
    let mut core = Bcast::<u64>::new(&plan, 0, 3, op1, None).unwrap();
    assert_eq!(driver.drive(op1, None, &mut core), Ok(11));
}

/// A root that failed inside the broadcast (it had entered the operation)
/// may have reached ranks whose correction still brings the value: a rank
/// waits `root_wait` for it, then ends its call with `RootFailed`. That
/// wait is its own setting, not the failure timeout: a node team raises its
/// threads' failure timeout by the process level's, and waiting that long
/// for each broadcast a dead proxy left unsent stalled its threads for
/// minutes.
#[test]
fn a_root_failed_inside_the_broadcast_is_waited_for_root_wait() {
    use corrected::driver::PeerView;
    let config = DriverConfig {
        failure_timeout: 50_000_000,
        root_wait: 5_000_000,
        ..DriverConfig::default()
    };
    let (net, plan, mut driver) = four_ranks(3, config);
    let op = driver.enter().unwrap();
    let inside = PeerView {
        entered: op + 1,
        ..PeerView::START
    };
    net.set_peer(0, inside);
    net.fail(0);
    let mut core = Bcast::<u64>::new(&plan, 0, 3, op, None).unwrap();
    let err = driver.drive(op, None, &mut core).unwrap_err();
    assert_eq!(err, Error::RootFailed { op, root: 0 });
    let waited = net.clock();
    assert!(
        (5_000_000..50_000_000).contains(&waited),
        "waited {waited} ns: root_wait, not the failure timeout"
    );
}

/// A failed root that, as far as the detector's view goes, never entered
/// the operation sent nobody its value: `RootFailed` at once. Where that
/// view may lag (a heartbeat between processes, sent operations ago), it
/// proves nothing: the rank waits `root_wait`, and a correction that
/// comes meanwhile is delivered (a SIGKILLed root taken for one that never
/// entered the broadcast it had sent made a survivor give up on a value the
/// others delivered).
#[test]
fn a_root_seen_outside_the_broadcast_fails_it_at_once_only_where_the_view_is_exact() {
    let config = DriverConfig {
        failure_timeout: 50_000_000,
        root_wait: 5_000_000,
        ..DriverConfig::default()
    };
    for lagging in [false, true] {
        let (net, plan, mut driver) = four_ranks(3, config);
        net.set_entries_lag(0, lagging);
        let op = driver.enter().unwrap();
        net.fail(0);
        // Rank 2 corrects rank 3 while it waits.
        net.arrive_while_waiting(2, 3, msg(op, Collective::Broadcast, 0, Tag::Leftward, 7));
        let mut core = Bcast::<u64>::new(&plan, 0, 3, op, None).unwrap();
        let got = driver.drive(op, None, &mut core);
        if lagging {
            assert_eq!(got, Ok(7), "the correction, within root_wait");
        } else {
            assert_eq!(got, Err(Error::RootFailed { op, root: 0 }));
            assert_eq!(net.waits(3), 0, "at once");
        }
    }
}

/// A core that waits for nothing it will get (an allreduce whose peers
/// nobody plays), lent to helpers while it waits.
struct Waits;

impl Protocol for Waits {
    type Payload = u64;
    type Output = u32;

    fn handle(&mut self, _now: Tick, _event: Event<Msg<u64>>) {}

    fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<u64>>> {
        None
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<u32> {
        None
    }

    fn is_quiescent(&self) -> bool {
        true
    }

    fn header(&self) -> Header {
        Header {
            op: 0,
            kind: Collective::Allreduce,
            root: None,
        }
    }

    fn may_return(&self) -> Leave {
        Leave::Now
    }

    fn is_finished(&self) -> bool {
        false
    }
}

/// A helper that pumps a waiting rank's call takes its messages of later
/// operations only while the rank's fence has room for them (4 operations
/// past the current one with a list each, 64 more with small lists): what
/// it leaves in the channel still holds the senders back. Before the fix
/// helpers drained the channel whatever its rank's fence held, so a root
/// broadcasting in a loop ran 125 operations ahead of a rank whose thread
/// was descheduled, and its fence allocated a list per operation past its
/// room (`tests/allocations.rs` caught it about once in 20 runs).
#[test]
fn a_helper_takes_no_more_than_the_fence_has_room_for() {
    let net = MemoryNet::<u64>::new(2, 1, 1 << 10);
    let config = DriverConfig {
        op_timeout: 1_000_000,
        ..DriverConfig::default()
    };
    let mut driver = Driver::new(net.transport(1), config);
    let op = driver.enter().unwrap();
    // The root's broadcasts 1..=200 come while rank 1 waits in operation 0.
    for later in 1..=200 {
        let m = msg(op + later, Collective::Broadcast, 0, Tag::Tree, 0);
        net.arrive_while_waiting(0, 1, m);
    }
    net.help_waiting(true);
    let err = driver.drive(op, None, &mut Waits).unwrap_err();
    assert!(matches!(err, Error::Timeout { op: 0, .. }), "{err:?}");
    let helped = net.helped();
    let (rank, left) = *helped.first().expect("a helper pumped the call");
    assert_eq!(rank, 1);
    assert_eq!(left, 200 - (4 + 64), "taken: one operation per list made");
}

/// Operations launched without waiting (`Driver::launch`, what the
/// immediate calls run on): three broadcasts pending at once, their root's
/// messages arriving last operation first and while the rank drives
/// another operation, each reaching its own core; a test without waiting
/// takes the output that has come; the others are waited in another order
/// than their start, each delivering its own value; an operation not
/// pending (any more) is `UnknownRequest`.
#[test]
fn launched_operations_complete_in_any_order() {
    let (net, plan, mut driver) = four_ranks(1, DriverConfig::default());
    let mut ops = Vec::new();
    for _ in 0..3 {
        let op = driver.enter().unwrap();
        let core = Bcast::<u64>::new(&plan, 0, 1, op, None).unwrap();
        driver.launch(op, core).unwrap();
        ops.push(op);
    }
    assert_eq!(driver.pending_ops(), ops);
    assert!(driver.try_complete(ops[0]).is_none(), "nothing has come");
    for &op in ops.iter().rev() {
        net.inject(
            0,
            1,
            msg(op, Collective::Broadcast, 0, Tag::Tree, 100 + u64::from(op)),
        );
    }
    // A blocking broadcast this rank roots, after them: their messages
    // reach their pending cores meanwhile.
    let op3 = driver.enter().unwrap();
    let mut root = Bcast::new(&plan, 1, 1, op3, Some(7)).unwrap();
    assert_eq!(driver.drive(op3, None, &mut root), Ok(7));
    driver.progress().unwrap();
    let first = driver.try_complete(ops[2]).expect("its message came");
    assert_eq!(*first.unwrap().downcast::<u64>().unwrap(), 102);
    for op in [ops[1], ops[0]] {
        let got = driver.wait_pending(op).unwrap();
        assert_eq!(*got.downcast::<u64>().unwrap(), 100 + u64::from(op));
    }
    assert!(driver.pending_ops().is_empty());
    assert!(matches!(
        driver.wait_pending(ops[0]),
        Err(Error::UnknownRequest { op: 0 })
    ));
    // One whose message comes only while its wait waits: the wait drives
    // its core with the blocking loop, and a newer pending one is served
    // meanwhile.
    let (op4, op5) = (driver.enter().unwrap(), driver.enter().unwrap());
    let op5 = {
        let core = Bcast::<u64>::new(&plan, 0, 1, op4, None).unwrap();
        driver.launch(op4, core).unwrap();
        let core = Bcast::<u64>::new(&plan, 0, 1, op5, None).unwrap();
        driver.launch(op5, core).unwrap();
        op5
    };
    net.arrive_while_waiting(0, 1, msg(op5, Collective::Broadcast, 0, Tag::Tree, 205));
    net.arrive_while_waiting(0, 1, msg(op4, Collective::Broadcast, 0, Tag::Tree, 204));
    let got = driver.wait_pending(op4).unwrap();
    assert_eq!(*got.downcast::<u64>().unwrap(), 204);
    assert!(net.waits(1) > 0, "the wait waited");
    let got = driver.try_complete(op5).expect("served during op 4's wait");
    assert_eq!(*got.unwrap().downcast::<u64>().unwrap(), 205);
}
