use corrected::protocol::gossip::{sos_timeout, Fcg, FcgPayload, GossipCorrection, GossipPlan};
use corrected::protocol::random::RandomStream;
use corrected::protocol::{Event, Header, Msg, Protocol, Transmit};
use corrected::sim::engine::{Engine, NEVER, UNLIMITED};
use corrected::types::{LogP, Rank, Tick};

struct Log<'p> {
    me: Rank,
    core: Fcg<'p, u16>,
}
impl<'p> Protocol for Log<'p> {
    type Payload = FcgPayload<u16>;
    type Output = u16;
    fn handle(&mut self, now: Tick, ev: Event<Msg<FcgPayload<u16>>>) {
        if let Event::Message { from, msg } = &ev {
            if msg.tag != corrected::protocol::Tag::Gossip {
                println!(
                    "{now:4} {} <- {from} {:?} sos={} k={:?}",
                    self.me,
                    msg.tag,
                    msg.payload.sos,
                    msg.payload.known.as_slice()
                );
            }
        }
        if let Event::Timer = ev {
            println!("{now:4} {} timer", self.me);
        }
        let before = self.core.entered_sos();
        self.core.handle(now, ev);
        if !before && self.core.entered_sos() {
            println!("{now:4} {} ENTERS SOS", self.me);
        }
    }
    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<FcgPayload<u16>>>> {
        let before = self.core.entered_sos();
        let t = self.core.poll_transmit(now);
        if !before && self.core.entered_sos() {
            println!("{now:4} {} ENTERS SOS (poll)", self.me);
        }
        if let Some(tx) = &t {
            if tx.msg.tag != corrected::protocol::Tag::Gossip && !tx.msg.payload.sos {
                println!(
                    "{now:4} {} -> {} {:?} k={:?}",
                    self.me,
                    tx.to,
                    tx.msg.tag,
                    tx.msg.payload.known.as_slice()
                );
            }
        }
        if self.core.is_finished() {}
        t
    }
    fn poll_deadline(&self) -> Option<Tick> {
        self.core.poll_deadline()
    }
    fn take_output(&mut self) -> Option<u16> {
        self.core.take_output()
    }
    fn is_quiescent(&self) -> bool {
        self.core.is_quiescent()
    }
    fn header(&self) -> Header {
        self.core.header()
    }
    fn is_finished(&self) -> bool {
        self.core.is_finished()
    }
    fn uses_time(&self) -> bool {
        true
    }
}

fn main() {
    let a: Vec<u64> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let (procs, stop, f, seed, victim, k, t) = (
        a[0] as u32,
        a[1],
        a[2] as u8,
        a[3],
        a[4] as usize,
        a[5] as u32,
        a[6],
    );
    let logp = LogP {
        latency: 2,
        overhead: 1,
    };
    let plan = GossipPlan::new(
        procs,
        logp,
        stop,
        GossipCorrection::FailureProof {
            f,
            timeout: sos_timeout(procs, logp),
        },
    )
    .unwrap();
    let mut cores: Vec<Log> = (0..procs)
        .map(|r| Log {
            me: r,
            core: Fcg::new(
                &plan,
                0,
                r,
                0,
                (r == 0).then_some(7),
                RandomStream::for_rank(seed, r, 0),
            )
            .unwrap(),
        })
        .collect();
    let mut death = vec![NEVER; procs as usize];
    let mut budget = vec![UNLIMITED; procs as usize];
    if t > 0 {
        death[victim] = t;
    }
    if k > 0 {
        budget[victim] = k;
    }
    let mut e = Engine::new(logp);
    let mut trace = Default::default();
    e.run_budgeted(&mut cores, &death, &budget, &mut trace);
    let g: Vec<Rank> = cores
        .iter()
        .filter(|c| c.core.is_g_node())
        .map(|c| c.me)
        .collect();
    println!("g-nodes {g:?} start {}", plan.correction_start());
}
