//! Unit tests of the FTCO reduce and allreduce core.

use super::*;
use crate::topology::{Shape, TreeSpec};
use crate::types::LogP;

type Core<'p> = FtcoReduce<'p, u64, fn(&mut u64, &u64)>;

fn add(acc: &mut u64, other: &u64) {
    *acc += other;
}

fn binary(procs: u32) -> FtcoPlan {
    let spec = TreeSpec::interleaved(Shape::KAry(2));
    FtcoPlan::new(spec, procs, LogP::new(2, 1).unwrap(), None).unwrap()
}

fn reduce(plan: &FtcoPlan, me: Rank) -> Core<'_> {
    let f = add as fn(&mut u64, &u64);
    FtcoReduce::new(plan, 0, me, 0, FtcoCollective::Reduce, 1 << me, f).unwrap()
}

fn part(value: u64, own: Rank, missing: Vec<Rank>) -> Msg<FtcoData<u64>> {
    Msg {
        op: 0,
        kind: Collective::Reduce,
        root: 0,
        tag: Tag::Upward,
        payload: FtcoData::Part {
            value,
            own: 1 << own,
            missing,
        },
    }
}

/// Root 0's first child `me`, its children `dead` and `live`, the
/// children of `dead`, and the inputs `live`'s subtree holds.
struct Family {
    me: Rank,
    dead: Rank,
    live: Rank,
    grandkids: Vec<Rank>,
    live_sum: u64,
}

fn family(plan: &FtcoPlan) -> Family {
    let t = plan.tree();
    let me = t.children(0)[0];
    let (dead, live) = (t.children(me)[0], t.children(me)[1]);
    Family {
        me,
        dead,
        live,
        grandkids: t.children(dead).to_vec(),
        live_sum: (1 << live) | t.children(live).iter().fold(0, |s, &c| s | 1 << c),
    }
}

fn send(core: &mut Core<'_>, now: Tick) -> Option<(Rank, Tag)> {
    core.poll_transmit(now).map(|t| (t.to, t.msg.tag))
}

/// A child silent past its f_ETA is asked by KEEPALIVE; no answer
/// within f_timeout and it is circumvented: its children are asked at
/// once, their DATA folded in, and the partial goes up missing it
/// (Algorithm 4, Figure 4).
#[test]
fn silent_child_is_asked_then_circumvented() {
    let plan = binary(15);
    let Family {
        me,
        dead,
        live,
        grandkids,
        live_sum,
    } = family(&plan);
    let mut core = reduce(&plan, me);
    core.handle(0, Event::Start);
    let at = plan.up_eta(live);
    let msg = part(live_sum, live, vec![]);
    core.handle(at, Event::Message { from: live, msg });
    assert_eq!(send(&mut core, at), Some((live, Tag::Ack)));
    // Algorithm 4 line 21: asked once its f_ETA has passed.
    let ask = plan.up_eta(dead) + 1;
    assert_eq!(core.poll_deadline(), Some(ask));
    core.handle(ask, Event::Timer);
    assert_eq!(send(&mut core, ask), Some((dead, Tag::KeepAlive)));
    let deadline = ask + plan.f_timeout(me, dead, 1) + 1;
    assert_eq!(core.poll_deadline(), Some(deadline));
    core.handle(deadline, Event::Timer);
    assert_eq!(core.timeouts(), 1);
    for &g in &grandkids {
        assert_eq!(send(&mut core, deadline), Some((g, Tag::KeepAlive)));
    }
    for &g in &grandkids {
        let msg = part(1 << g, g, vec![]);
        core.handle(deadline + 5, Event::Message { from: g, msg });
    }
    let up = core.poll_transmit(deadline + 5).unwrap();
    assert_eq!((up.to, up.msg.tag), (0, Tag::Upward));
    let FtcoData::Part { value, missing, .. } = up.msg.payload else {
        panic!("DATA up carries a partial");
    };
    let want = (1 << me) | live_sum | grandkids.iter().fold(0, |s, &g| s | 1 << g);
    assert_eq!((value, missing), (want, vec![dead]));
    assert_eq!(core.missing(), Some(vec![dead]));
}

/// A Down child the engine reports failed is circumvented at once, as
/// a timeout would, but without one: its children's partials come
/// straight here (asked at once where the news comes during the
/// operation), and the partial goes up missing it; with the parent
/// known failed, the DATA goes to the grand-parent.
#[test]
fn known_failures_are_circumvented_without_a_timeout() {
    let plan = binary(15);
    let Family {
        me,
        dead,
        live,
        grandkids,
        live_sum,
    } = family(&plan);
    let mut core = reduce(&plan, me);
    core.handle(0, Event::Start);
    core.handle(0, Event::PeerFailed(dead));
    let at = plan.up_eta(live);
    core.handle(
        at,
        Event::Message {
            from: live,
            msg: part(live_sum, live, vec![]),
        },
    );
    for &g in &grandkids {
        core.handle(
            at,
            Event::Message {
                from: g,
                msg: part(1 << g, g, vec![]),
            },
        );
    }
    let sent: Vec<_> = std::iter::from_fn(|| core.poll_transmit(at)).collect();
    let up = sent
        .iter()
        .find(|t| t.msg.tag == Tag::Upward)
        .expect("DATA up");
    let FtcoData::Part { value, missing, .. } = &up.msg.payload else {
        panic!("DATA up carries a partial");
    };
    let want = (1 << me) | live_sum | grandkids.iter().fold(0, |s, &g| s | 1 << g);
    assert_eq!((up.to, *value, missing.clone()), (0, want, vec![dead]));
    assert_eq!(core.timeouts(), 0);
    // News during the operation: the children may have handed their
    // partials to `dead` already, so they are asked at once.
    let mut core = reduce(&plan, me);
    core.handle(0, Event::Start);
    core.handle(5, Event::PeerFailed(dead));
    for &g in &grandkids {
        assert_eq!(send(&mut core, 5), Some((g, Tag::KeepAlive)));
    }
    // A leaf under `dead`: its DATA goes to `me`, the first live node
    // above.
    let mut leaf = reduce(&plan, grandkids[0]);
    leaf.handle(0, Event::Start);
    leaf.handle(0, Event::PeerFailed(dead));
    assert_eq!(send(&mut leaf, 0), Some((me, Tag::Upward)));
}

/// A late partial that shares nodes with one folded in already counts
/// only its sender's own input, and the root then asks for what the
/// partial held besides: every node once.
#[test]
fn overlapping_late_partial_counts_its_sender_once() {
    let plan = binary(7);
    let t = plan.tree();
    let (a, b) = (t.children(0)[0], t.children(0)[1]);
    let (c, d) = (t.children(a)[0], t.children(a)[1]);
    let mut root = reduce(&plan, 0);
    root.handle(0, Event::Start);
    // c's DATA came up past a (a seemed dead to c).
    root.handle(
        20,
        Event::Message {
            from: c,
            msg: part(1 << c, c, vec![]),
        },
    );
    // a's partial holds c and d: only a's own input is new.
    let whole_a = (1 << a) | (1 << c) | (1 << d);
    root.handle(
        21,
        Event::Message {
            from: a,
            msg: part(whole_a, a, vec![]),
        },
    );
    let sub_b = (1 << b) | t.children(b).iter().fold(0, |s, &x| s | 1 << x);
    root.handle(
        22,
        Event::Message {
            from: b,
            msg: part(sub_b, b, vec![]),
        },
    );
    assert_eq!(root.take_output(), None, "d is not in yet");
    let sent: Vec<_> = (23..27).filter_map(|now| send(&mut root, now)).collect();
    assert_eq!(
        sent,
        vec![
            (c, Tag::Ack),
            (a, Tag::Ack),
            (b, Tag::Ack),
            (d, Tag::KeepAlive)
        ]
    );
    root.handle(
        30,
        Event::Message {
            from: d,
            msg: part(1 << d, d, vec![]),
        },
    );
    assert_eq!(
        root.take_output(),
        Some(FtcoOutput::Value {
            value: 0b111_1111,
            missing: Vec::new()
        })
    );
    assert_eq!(root.missing(), Some(vec![]));
}

#[test]
fn bad_input_is_a_typed_error() {
    let plan = binary(7);
    let f = add as fn(&mut u64, &u64);
    assert!(matches!(
        FtcoReduce::new(&plan, 0, 7, 0, FtcoCollective::Reduce, 1, f),
        Err(Error::RankOutOfRange { rank: 7, procs: 7 })
    ));
    assert!(FtcoReduce::new(&plan, 9, 0, 0, FtcoCollective::Allreduce, 1, f).is_err());
}
