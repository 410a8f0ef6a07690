//! LogGP in the simulator: a send of k bytes occupies its
//! process o + (k - 1) G, arrives L later, and takes o to receive
//! (Alexandrov et al., 1995). G = 0 is plain LogP, the papers' model, and
//! leaves every result as it was.

use corrected::protocol::bcast::Correction;
use corrected::sim::allreduce::{AllreduceScenario, AllreduceSim};
use corrected::sim::bcast::{BcastScenario, BcastSim};
use corrected::sim::engine::NEVER;
use corrected::sim::faults::FaultPlan;
use corrected::sim::ReduceConfig;
use corrected::topology::TreeSpec;
use corrected::types::{LogP, MessageSize, Tick};

fn bcast(procs: u32, logp: LogP, correction: Correction) -> BcastScenario {
    let tree = TreeSpec::binomial();
    BcastScenario::new(tree, procs, correction, logp, FaultPlan::none()).unwrap()
}

#[test]
fn plain_logp_is_the_default_and_changes_nothing() {
    let logp = LogP::PAPER;
    for correction in [Correction::Checked, Correction::None] {
        let plain = bcast(1000, logp, correction);
        assert_eq!(plain.message_size(), MessageSize::SMALL);
        let explicit = bcast(1000, logp, correction).with_message_size(MessageSize::SMALL);
        let zero_gap = bcast(1000, logp, correction).with_message_size(MessageSize {
            bytes: 1 << 20,
            gap_per_byte: 0,
        });
        for seed in 0..5 {
            let a = BcastSim::new(&plain).run(seed);
            assert_eq!(a, BcastSim::new(&explicit).run(seed));
            assert_eq!(a, BcastSim::new(&zero_gap).run(seed));
        }
    }
}

/// A binomial tree of 2^d ranks colors its last rank after d hops along
/// the first children, each the sender's busy time s = o + (k - 1) G, the
/// wire L and the receive o: d (s + L + o).
#[test]
fn a_binomial_tree_takes_d_hops_of_the_loggp_cost() {
    for (l, o) in [(2, 1), (10, 1), (1, 3)] {
        let logp = LogP::new(l, o).unwrap();
        for (bytes, g) in [(1, 5), (8, 1), (1000, 2), (65536, 1)] {
            let size = MessageSize::new(bytes, g).unwrap();
            let s: Tick = o + (bytes - 1) * g;
            for d in [1u32, 3, 6] {
                let sc = bcast(1 << d, logp, Correction::None).with_message_size(size);
                let run = BcastSim::new(&sc).run(0);
                assert_eq!(
                    run.coloring_latency,
                    Tick::from(d) * (s + l + o),
                    "L={l} o={o} k={bytes} G={g} P=2^{d}"
                );
            }
        }
    }
}

#[test]
fn a_pair_allreduce_costs_one_loggp_message() {
    let (bytes, g) = (4096, 3);
    let size = MessageSize::new(bytes, g).unwrap();
    let sc = AllreduceScenario::new(ReduceConfig::new(2, 1), Correction::Checked)
        .unwrap()
        .with_message_size(size);
    let logp = ReduceConfig::new(2, 1).logp;
    let run = AllreduceSim::new(&sc).run_with(&[NEVER, NEVER], &[]);
    assert!(run.result_consistent);
    assert_eq!(
        run.latency,
        logp.overhead + (bytes - 1) * g + logp.latency + logp.overhead
    );
}

#[test]
fn a_message_cost_beyond_the_clock_is_a_typed_error() {
    assert!(MessageSize::new(1 << 20, 1 << 20).is_err());
    assert!(
        MessageSize::new(0, u64::MAX).is_ok(),
        "no bytes cost nothing extra"
    );
    assert_eq!(
        MessageSize::new(1 << 12, 1 << 20).unwrap().extra(),
        ((1 << 12) - 1) << 20
    );
}
