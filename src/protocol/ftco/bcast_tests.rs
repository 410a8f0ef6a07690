//! Unit tests of `bcast.rs`.

use super::*;
use crate::error::ConfigError;
use crate::topology::{Shape, TreeSpec};
use crate::types::Collective;
use crate::types::LogP;

type Out = Option<(Rank, Tag)>;

fn send(core: &mut Ftco<'_, u8>, now: Tick) -> Out {
    core.poll_transmit(now).map(|t| (t.to, t.msg.tag))
}

fn msg(tag: Tag, payload: Option<u8>) -> Msg<Option<u8>> {
    Msg {
        op: 0,
        kind: Collective::Broadcast,
        root: 0,
        tag,
        payload,
    }
}

fn binary(procs: u32, timeout: Option<Tick>) -> FtcoPlan {
    let logp = LogP::new(2, 1).unwrap();
    FtcoPlan::new(TreeSpec::interleaved(Shape::KAry(2)), procs, logp, timeout).unwrap()
}

/// A DATA left unacknowledged past its timeout circumvents the child:
/// DATA goes to the child's children; the late ACK refutes it.
#[test]
fn silent_child_is_circumvented() {
    let plan = binary(15, None);
    let kids = plan.tree().children(0).to_vec();
    let grandkids = plan.tree().children(kids[0]).to_vec();
    let mut root = Ftco::new(&plan, 0, 0, 0, Some(7u8)).unwrap();
    root.handle(0, Event::Start);
    assert_eq!(root.take_output(), Some(7));
    assert_eq!(send(&mut root, 0), Some((kids[0], Tag::Tree)));
    assert_eq!(send(&mut root, 1), Some((kids[1], Tag::Tree)));
    assert_eq!(send(&mut root, 2), None);
    // f_timeout(0, kids[0], 1) = 8 + 2 + 2: suspected at 0 + 12 + 1.
    assert_eq!(root.poll_deadline(), Some(13));
    root.handle(
        10,
        Event::Message {
            from: kids[1],
            msg: msg(Tag::Ack, None),
        },
    );
    assert_eq!(root.poll_deadline(), Some(13));
    assert_eq!(root.may_return(), Leave::Not);
    root.handle(13, Event::Timer);
    assert_eq!(root.timeouts(), 1);
    assert_eq!(send(&mut root, 13), Some((grandkids[0], Tag::Tree)));
    assert_eq!(send(&mut root, 14), Some((grandkids[1], Tag::Tree)));
    root.handle(
        15,
        Event::Message {
            from: kids[0],
            msg: msg(Tag::Ack, None),
        },
    );
    assert_eq!(root.refuted(), 1);
    assert_eq!(root.suspicions().collect::<Vec<_>>(), vec![(kids[0], 13)]);
}

/// A failure the engine reports is routed around at once, without a
/// timeout: DATA for a known-failed child goes to its children, and a
/// node whose parent is known failed waits on its grand-parent.
#[test]
fn known_failures_are_routed_around_without_a_timeout() {
    let plan = binary(15, None);
    let kids = plan.tree().children(0).to_vec();
    let grandkids = plan.tree().children(kids[0]).to_vec();
    let mut root = Ftco::new(&plan, 0, 0, 0, Some(7u8)).unwrap();
    root.handle(0, Event::Start);
    root.handle(0, Event::PeerFailed(kids[0]));
    assert_eq!(send(&mut root, 0), Some((grandkids[0], Tag::Tree)));
    assert_eq!(send(&mut root, 1), Some((grandkids[1], Tag::Tree)));
    assert_eq!(send(&mut root, 2), Some((kids[1], Tag::Tree)));
    assert_eq!(send(&mut root, 3), None);
    for (at, from) in [(5, grandkids[0]), (6, grandkids[1]), (7, kids[1])] {
        let ack = msg(Tag::Ack, None);
        root.handle(at, Event::Message { from, msg: ack });
    }
    assert_eq!(root.may_return(), Leave::Now);
    assert_eq!(root.timeouts(), 0);
    // A DATA out when the news comes: its children are sent to at once.
    let mut root = Ftco::new(&plan, 0, 0, 0, Some(7u8)).unwrap();
    root.handle(0, Event::Start);
    assert_eq!(send(&mut root, 0), Some((kids[0], Tag::Tree)));
    root.handle(1, Event::PeerFailed(kids[0]));
    assert_eq!(send(&mut root, 1), Some((kids[1], Tag::Tree)));
    assert_eq!(send(&mut root, 2), Some((grandkids[0], Tag::Tree)));
    assert_eq!(root.timeouts(), 0);
    // The orphan waits on the root, and asks it, not its dead parent.
    let me = grandkids[0];
    let mut node = Ftco::new(&plan, 0, me, 0, None::<u8>).unwrap();
    node.handle(0, Event::Start);
    node.handle(0, Event::PeerFailed(kids[0]));
    let ask = node.poll_deadline().unwrap();
    node.handle(ask, Event::Timer);
    assert_eq!(send(&mut node, ask), Some((0, Tag::KeepAlive)));
    assert_eq!(node.timeouts(), 0);
}

/// A node without the value asks its parent once its f_ETA has passed
/// (Algorithm 4 line 21), then, with no answer, its grand-parent
/// (Appendix D), which answers with DATA; an engine's patience delays the
/// first question by as much.
#[test]
fn keepalive_walks_up_to_the_grandparent() {
    let plan = binary(15, Some(4));
    let me = 7;
    let parent = plan.tree().parent(me).unwrap();
    let grand = plan.tree().parent(parent).unwrap();
    let mut node = Ftco::new(&plan, 0, me, 0, None::<u8>).unwrap();
    node.handle(0, Event::Start);
    let patience = plan.eta[me as usize] + 1;
    assert_eq!(node.poll_deadline(), Some(patience));
    let patient = binary(15, Some(4)).with_patience(4);
    let mut waits = Ftco::new(&patient, 0, me, 0, None::<u8>).unwrap();
    waits.handle(0, Event::Start);
    assert_eq!(waits.poll_deadline(), Some(patience + 4));
    assert_eq!(send(&mut node, 1), None);
    node.handle(patience, Event::Timer);
    assert_eq!(send(&mut node, patience), Some((parent, Tag::KeepAlive)));
    let wait = plan.f_timeout(me, parent, 1) + 1;
    assert_eq!(node.poll_deadline(), Some(patience + wait));
    node.handle(patience + wait, Event::Timer);
    let t = patience + wait;
    assert_eq!(send(&mut node, t), Some((grand, Tag::KeepAlive)));
    assert_eq!(node.timeouts(), 1);
    // The grand-parent's DATA: delivered and acknowledged.
    node.handle(
        t + 5,
        Event::Message {
            from: grand,
            msg: msg(Tag::Tree, Some(9)),
        },
    );
    assert_eq!(node.take_output(), Some(9));
    assert_eq!(send(&mut node, t + 5), Some((grand, Tag::Ack)));
    assert!(node.is_quiescent());
    assert_eq!(node.may_return(), Leave::Now);
}

/// KEEPALIVE is answered with ACK without the value, with DATA with it
/// (a pending one too, when DATA arrives first: Algorithm 2's order).
#[test]
fn keepalive_answers() {
    let plan = binary(15, None);
    let child = plan.tree().children(1)[0];
    let mut node = Ftco::new(&plan, 0, 1, 0, None::<u8>).unwrap();
    let ka = Event::Message {
        from: child,
        msg: msg(Tag::KeepAlive, None),
    };
    node.handle(1, ka);
    assert_eq!(send(&mut node, 1), Some((child, Tag::Ack)));
    node.handle(2, ka);
    node.handle(
        2,
        Event::Message {
            from: 0,
            msg: msg(Tag::Tree, Some(3)),
        },
    );
    let sent: Vec<Out> = (2..6).map(|t| send(&mut node, t)).collect();
    let kids = plan.tree().children(1);
    assert_eq!(
        sent,
        vec![
            Some((kids[0], Tag::Tree)),
            Some((kids[1], Tag::Tree)),
            Some((child, Tag::Tree)),
            Some((0, Tag::Ack)),
        ]
    );
}

#[test]
fn bad_input_is_a_typed_error() {
    let logp = LogP::new(2, 1).unwrap();
    let spec = TreeSpec::interleaved(Shape::Binomial);
    assert!(matches!(
        FtcoPlan::new(spec, 4, logp, Some(0)),
        Err(ConfigError::BadTimeout { .. })
    ));
    assert!(FtcoPlan::new(spec, 0, logp, None).is_err());
    assert_eq!(FtcoPlan::default_timeout(logp), 8);
    let plan = FtcoPlan::new(spec, 4, logp, None).unwrap();
    assert!(Ftco::new(&plan, 4, 0, 0, Some(1u8)).is_err());
    assert!(Ftco::new(&plan, 0, 4, 0, Some(1u8)).is_err());
    assert!(Ftco::new(&plan, 0, 0, 0, None::<u8>).is_err());
}
