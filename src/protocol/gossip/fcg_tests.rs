//! Unit tests of `fcg.rs`.

use super::*;
use crate::types::Collective;

const UNIT: LogP = LogP {
    latency: 1,
    overhead: 1,
};

fn plan(procs: u32, stop: Tick, f: u8) -> GossipPlan {
    let correction = GossipCorrection::FailureProof {
        f,
        timeout: sos_timeout(procs, UNIT),
    };
    GossipPlan::new(procs, UNIT, stop, correction).unwrap()
}

fn msg(tag: Tag, sos: bool, known: &[Rank]) -> Msg<FcgPayload<u8>> {
    let mut k = Known::new();
    k.ids[..known.len()].copy_from_slice(known);
    k.len = known.len() as u8;
    Msg {
        op: 0,
        kind: Collective::Broadcast,
        root: 0,
        tag,
        payload: FcgPayload {
            value: 9,
            sos,
            known: k,
        },
    }
}

#[test]
fn near_keeps_the_nearest_distinct_distances() {
    let mut n = Near::default();
    for d in [5, 0, 3, 5, 9, 1, 4] {
        n.insert(d, 3);
    }
    assert_eq!(&n.dist[..n.len()], &[1, 3, 4]);
    n.insert(2, 3);
    assert_eq!(&n.dist[..n.len()], &[1, 2, 3]);
}

/// f outside 1..=7, a zero timeout and a core of the wrong plan are
/// typed errors, not panics.
#[test]
fn bad_parameters_are_typed_errors() {
    for f in [0, MAX_FCG_FAULTS + 1, u8::MAX] {
        let c = GossipCorrection::FailureProof { f, timeout: 9 };
        assert!(matches!(
            GossipPlan::new(16, UNIT, 4, c),
            Err(ConfigError::BadGossip { .. })
        ));
    }
    let c = GossipCorrection::FailureProof { f: 1, timeout: 0 };
    assert!(GossipPlan::new(16, UNIT, 4, c).is_err());
    let ccg = GossipPlan::new(16, UNIT, 4, GossipCorrection::Checked).unwrap();
    let rng = RandomStream::for_rank(1, 0, 0);
    assert!(Fcg::new(&ccg, 0, 0, 0, Some(1u8), rng.clone()).is_err());
    let p = plan(16, 4, 1);
    assert!(crate::protocol::gossip::Gossip::new(&p, 0, 0, 0, Some(1u8), rng.clone()).is_err());
    assert!(Fcg::new(&p, 0, 16, 0, Some(1u8), rng.clone()).is_err());
    assert!(Fcg::new(&p, 0, 0, 0, None::<u8>, rng).is_err());
}

/// Line 13: a c-node exits once it has heard of f + 1 distinct g-nodes
/// (sources and carried arrays); it never sends a correction message,
/// and may not return before.
#[test]
fn a_c_node_exits_after_f_plus_1_g_nodes() {
    let p = plan(16, 2, 2);
    let start = p.correction_start();
    let mut node = Fcg::new(&p, 0, 5, 0, None::<u8>, RandomStream::for_rank(1, 5, 0)).unwrap();
    node.handle(0, Event::Start);
    node.handle(
        start + 3,
        Event::Message {
            from: 4,
            msg: msg(Tag::Rightward, false, &[3]),
        },
    );
    assert_eq!(node.take_output(), Some(9));
    assert!(!node.is_g_node() && !node.is_finished());
    assert_eq!(node.may_return(), Leave::Not);
    assert_eq!(
        node.poll_deadline(),
        Some(start + 3 + sos_timeout(16, UNIT))
    );
    // The same g-node again teaches nothing.
    node.handle(
        start + 4,
        Event::Message {
            from: 3,
            msg: msg(Tag::Rightward, false, &[4]),
        },
    );
    assert!(!node.is_finished());
    assert!(node.poll_transmit(start + 4).is_none());
    node.handle(
        start + 5,
        Event::Message {
            from: 7,
            msg: msg(Tag::Leftward, false, &[]),
        },
    );
    assert!(node.is_finished() && node.is_quiescent());
    assert_eq!(node.may_return(), Leave::Now);
    assert!(!node.entered_sos());
    assert_eq!(node.poll_deadline(), None);
}

/// Line 14 and lines 8-10: a c-node that hears of too few g-nodes
/// enters SOS at its timeout and sends to every other node once, then
/// exits; a node that receives an SOS message enters SOS too.
#[test]
fn timeout_and_sos() {
    let procs = 8;
    let p = plan(procs, 2, 1);
    let at = p.correction_start() + 2;
    let mut node = Fcg::new(&p, 0, 5, 0, None::<u8>, RandomStream::for_rank(1, 5, 0)).unwrap();
    node.handle(
        at,
        Event::Message {
            from: 0,
            msg: msg(Tag::Rightward, false, &[]),
        },
    );
    let due = node.poll_deadline().unwrap();
    assert!(node.poll_transmit(due - 1).is_none());
    node.handle(due, Event::Timer);
    assert_eq!(node.sos_cause(), Some(SosCause::Timeout));
    let mut to = Vec::new();
    for now in due..due + 20 {
        if let Some(tx) = node.poll_transmit(now) {
            assert!(tx.msg.payload.sos);
            to.push(tx.to);
        }
    }
    to.sort_unstable();
    assert_eq!(to, vec![0, 1, 2, 3, 4, 6, 7]);
    assert!(node.is_finished() && node.is_quiescent());
    // An uncolored node receiving SOS is colored and relays.
    let mut other = Fcg::new(&p, 0, 2, 0, None::<u8>, RandomStream::for_rank(1, 2, 0)).unwrap();
    other.handle(
        due + 3,
        Event::Message {
            from: 5,
            msg: msg(Tag::Rightward, true, &[]),
        },
    );
    assert_eq!(other.take_output(), Some(9));
    assert_eq!(other.sos_cause(), Some(SosCause::Message));
    assert!(!other.is_finished());
    assert_eq!(other.poll_transmit(due + 3).map(|t| t.to), Some(3));
}

/// Line 24: once a g-node knows f + 1 g-nodes ahead it restarts its
/// backward sends from distance 1 (the finalization round), carrying
/// them; it stops forward past the (f + 1)-th of them (line 25).
#[test]
fn knowing_f_plus_1_ahead_starts_the_backward_finalization() {
    let procs = 32;
    let p = plan(procs, 0, 1);
    let start = p.correction_start();
    let mut root = Fcg::new(&p, 0, 0, 0, Some(9u8), RandomStream::for_rank(1, 0, 0)).unwrap();
    root.handle(0, Event::Start);
    let mut sent = Vec::new();
    for now in start..start + 6 {
        let tx = root.poll_transmit(now).unwrap();
        sent.push((tx.msg.tag, tx.to));
    }
    // Backward first, alternating: 31, 1, 30, 2, 29, 3.
    let to: Vec<Rank> = sent.iter().map(|s| s.1).collect();
    assert_eq!(to, vec![31, 1, 30, 2, 29, 3]);
    // Node 2 (a g-node ahead) tells it of itself and node 4.
    root.handle(
        start + 6,
        Event::Message {
            from: 2,
            msg: msg(Tag::Leftward, false, &[4]),
        },
    );
    let tx = root.poll_transmit(start + 6).unwrap();
    assert_eq!(
        (tx.msg.tag, tx.to),
        (Tag::Leftward, 31),
        "restarted at distance 1"
    );
    assert_eq!(tx.msg.payload.known.as_slice(), &[2, 4]);
    let tx = root.poll_transmit(start + 7).unwrap();
    assert_eq!(
        (tx.msg.tag, tx.to),
        (Tag::Rightward, 4),
        "forward goes on to 4"
    );
    // Forward stopped past node 4: backward sends only, every other
    // slot (the forward slot passes idle, one O, with a deadline).
    let mut back = 0;
    for now in start + 8..start + 20 {
        match root.poll_transmit(now) {
            Some(tx) => {
                assert_eq!(tx.msg.tag, Tag::Leftward);
                back += 1;
            }
            None => assert_eq!(root.poll_deadline(), Some(now + 1)),
        }
    }
    assert_eq!(back, 6);
    assert!(!root.is_finished());
}
