//! The broadcast algorithm's options, spelled alike by `corrected run`
//! (threads) and `corrected mpi` (processes): `--algorithm`, `--tree`,
//! `--correction`, `--gossip-time`, `--seed` and `--timeout-ms`, read
//! together into the team's [`BroadcastAlgorithm`] and what it promises.

use std::time::Duration;

use clap::Args;

use corrected::protocol::bcast::Correction;
use corrected::protocol::gossip::{CorrectionChoice, GossipSpec};
use corrected::runtime::{BroadcastAlgorithm, ReduceAlgorithm, TeamBuilder, DEFAULT_FTCO_TIMEOUT};
use corrected::topology::TreeSpec;

use crate::error::CliError;
use crate::limits::out_of_range;
use crate::op::Op;

/// The broadcast algorithm's options (flattened into a subcommand's).
#[derive(Args, Debug)]
pub struct BcastArgs {
    /// Dissemination tree: auto (binomial, but for the corrected broadcast a flat tree, kary:P-1, where ranks outnumber cores), binomial, lame:K, kary:K, knomial:K, multiroot:K (FTCO 5.2.1; its roots exchange in an FTCO allreduce) or optimal; prefix inorder- for depth-first numbering.
    #[arg(long, default_value = "auto")]
    pub tree: String,
    /// Correction: none, opportunistic:D, optimized:D, relaying:D, forwarding:D, checked (the default), checked-sync or delayed:NANOS (NANOS + (ranks - 1) x --pace-us below --timeout);
    /// with --algorithm gossip: none (GOS), ocg, ocg:C, ccg (the default) or fcg:F (FCG surviving F failures during the correction).
    /// Refused with big, ftco and ack-tree, which have none.
    #[arg(long)]
    pub correction: Option<String>,
    /// Broadcast algorithm: tree (a corrected tree), gossip (corrected
    /// gossip: random gossip until --gossip-time, then --correction), big
    /// (the binomial graph baseline), ftco (FTCO's DATA/KEEPALIVE/ACK
    /// broadcast over --tree, timeouts of --timeout-ms; with --op reduce,
    /// allreduce or barrier, FTCO's reduce and allreduce instead of
    /// up-correction) or ack-tree (--tree with an ACK gather, no fault
    /// tolerance).
    #[arg(long, default_value = "tree")]
    pub algorithm: String,
    /// FTCO's timeout unit T in milliseconds (--algorithm ftco only): a
    /// DATA to a rank d tree levels away is suspected after d x T (plus
    /// 1 µs per child); default 50 (above the scheduling noise measured
    /// with 8 and 32 ranks on 2 cores, docs/algorithms.md).
    #[arg(long)]
    pub timeout_ms: Option<f64>,
    /// Corrected gossip's T in ticks of the paper's model (L = 2, o = 1),
    /// counted in each rank's own send slots, or auto (Eq. 3 / Eq. 4; the
    /// default). With --algorithm gossip only.
    #[arg(long)]
    pub gossip_time: Option<String>,
    /// Seed of gossip's random peers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// What [`BcastArgs::choose`] read: the algorithm, its promise, its name,
/// and the tree and correction the team is built with.
#[derive(Clone, Debug)]
pub struct Chosen {
    /// The team's broadcast algorithm.
    pub algorithm: BroadcastAlgorithm,
    /// What it promises about delivery.
    pub delivery: Delivery,
    /// Its name for reports.
    pub name: String,
    /// The team's tree (also FTCO's and the ack tree's); `None`: the
    /// team's pick (`TeamBuilder::tree`).
    pub tree: Option<TreeSpec>,
    /// The team's tree correction: `--correction` with the corrected tree,
    /// checked otherwise (with gossip `--correction` names gossip's; the
    /// allreduce's broadcast takes this one).
    pub correction: Correction,
    /// The team's reduce algorithm: FTCO with `--algorithm ftco` and an
    /// operation other than a broadcast, else up-correction.
    pub reduce: ReduceAlgorithm,
    /// Gossip's seed.
    seed: u64,
}

impl BcastArgs {
    /// Reads the options for `op` (a broadcast algorithm other than the
    /// tree needs `op` to be a broadcast), with `op_timeout_s` the
    /// operation timeout in seconds (FTCO's unit must stay below it).
    pub fn choose(&self, op: Op, op_timeout_s: f64) -> Result<Chosen, CliError> {
        let tree: Option<TreeSpec> = match self.tree.trim() {
            t if t.eq_ignore_ascii_case("auto") => None,
            t => Some(t.parse()?),
        };
        let ftco_reduction = op != Op::Bcast && self.algorithm.eq_ignore_ascii_case("ftco");
        let (algorithm, delivery, name, reduce) = if ftco_reduction {
            // FTCO reduce and allreduce (Definition 3.2): with the root
            // alive, every live rank's input is in, whatever fails.
            no_correction(self)?;
            let timeout = ftco_timeout(self, op_timeout_s)?;
            let name = ftco_name(self, timeout);
            let reduce = ReduceAlgorithm::Ftco { timeout };
            (BroadcastAlgorithm::Tree, FTCO_DELIVERY, name, reduce)
        } else {
            let (algorithm, delivery, name) = broadcast_algorithm(self, op, op_timeout_s)?;
            (algorithm, delivery, name, ReduceAlgorithm::UpCorrection)
        };
        let ftco = ftco_reduction || matches!(algorithm, BroadcastAlgorithm::Ftco { .. });
        if self.timeout_ms.is_some() && !ftco {
            return Err(out_of_range(
                "--timeout-ms",
                self.timeout_ms.unwrap_or_default(),
                "only FTCO has a timeout unit (--timeout is the operation timeout, in seconds)",
                "pass --timeout-ms with --algorithm ftco only",
            ));
        }
        if self.gossip_time.is_some() && !matches!(algorithm, BroadcastAlgorithm::Gossip(_)) {
            return Err(out_of_range(
                "--gossip-time",
                self.gossip_time.as_deref().unwrap_or_default(),
                "only corrected gossip has a gossip time",
                "pass --gossip-time with --algorithm gossip only",
            ));
        }
        let correction: Correction = if matches!(algorithm, BroadcastAlgorithm::Tree) {
            self.tree_correction().parse()?
        } else {
            Correction::Checked
        };
        Ok(Chosen {
            algorithm,
            delivery,
            name,
            tree,
            correction,
            reduce,
            seed: self.seed,
        })
    }
}

impl BcastArgs {
    /// `--correction` for a corrected tree: checked unless given.
    pub fn tree_correction(&self) -> &str {
        self.correction.as_deref().unwrap_or("checked")
    }
}

impl Chosen {
    /// `builder` with the chosen tree, correction, algorithm and seed.
    pub fn apply(&self, builder: TeamBuilder) -> TeamBuilder {
        let builder = match self.tree {
            Some(tree) => builder.tree(tree),
            None => builder,
        };
        builder
            .correction(self.correction)
            .broadcast(self.algorithm)
            .reduce(self.reduce)
            .seed(self.seed)
    }
}

/// What the broadcast algorithm promises about delivery.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// Every live rank gets the value with no rank failed (false for GOS
    /// and OCG, which reach everyone only with high probability).
    pub always: bool,
    /// ... also with ranks dead before the operation.
    pub despite_dead_ranks: bool,
    /// ... also with ranks failing during the operation (the root alive).
    pub despite_deaths_during: bool,
}

/// `--algorithm`, `--gossip-time` and `--correction` read together: the
/// team's broadcast algorithm and what it promises.
fn broadcast_algorithm(
    args: &BcastArgs,
    op: Op,
    op_timeout_s: f64,
) -> Result<(BroadcastAlgorithm, Delivery, String), CliError> {
    match args.algorithm.to_ascii_lowercase().as_str() {
        "tree" => {
            let correction: Correction = args.tree_correction().parse()?;
            let delivery = Delivery {
                always: true,
                despite_dead_ranks: correction.guarantees_delivery(),
                despite_deaths_during: false,
            };
            Ok((BroadcastAlgorithm::Tree, delivery, correction.to_string()))
        }
        "gossip" if op == Op::Bcast => {
            let time = args.gossip_time.as_deref().unwrap_or("auto");
            let correction = args.correction.as_deref().unwrap_or("ccg");
            let spec = GossipSpec {
                time: time.parse().map_err(|_| {
                    out_of_range(
                        "--gossip-time",
                        time,
                        "T is a number of ticks, or auto",
                        "pass --gossip-time auto or a number of ticks",
                    )
                })?,
                correction: correction.parse().map_err(|_| {
                    out_of_range(
                        "--correction",
                        correction,
                        "corrected gossip's corrections are none, ocg[:C], ccg (checked) and fcg[:F] (F from 1 to 7)",
                        "pass --correction ccg, ocg, ocg:C, fcg, fcg:F or none",
                    )
                })?,
                ..GossipSpec::default()
            };
            let checked = matches!(
                spec.correction,
                CorrectionChoice::Checked | CorrectionChoice::FailureProof(_)
            );
            let delivery = Delivery {
                always: checked,
                despite_dead_ranks: checked,
                despite_deaths_during: false,
            };
            let name = format!("gossip T={} {}", spec.time, spec.correction);
            Ok((BroadcastAlgorithm::Gossip(spec), delivery, name))
        }
        "big" if op == Op::Bcast => {
            no_correction(args)?;
            // Consistent while fewer than ⌈log2 P⌉ ranks fail: counted as
            // promised only fault-free (the tally does not know P here).
            let delivery = Delivery {
                always: true,
                despite_dead_ranks: false,
                despite_deaths_during: false,
            };
            Ok((BroadcastAlgorithm::Big, delivery, "big".to_string()))
        }
        "ftco" if op == Op::Bcast => {
            no_correction(args)?;
            let timeout = ftco_timeout(args, op_timeout_s)?;
            let name = ftco_name(args, timeout);
            Ok((BroadcastAlgorithm::Ftco { timeout }, FTCO_DELIVERY, name))
        }
        "ack-tree" if op == Op::Bcast => {
            // No fault tolerance: a failed rank's ancestors wait for its ACK
            // until --timeout.
            no_correction(args)?;
            let delivery = Delivery {
                always: true,
                despite_dead_ranks: false,
                despite_deaths_during: false,
            };
            let name = format!("ack-tree over {}", args.tree);
            Ok((BroadcastAlgorithm::AckTree, delivery, name))
        }
        "gossip" | "big" | "ack-tree" => Err(out_of_range(
            "--algorithm",
            &args.algorithm,
            "corrected gossip, BIG and the ack tree are broadcast algorithms",
            "pass --op bcast with --algorithm gossip, big or ack-tree",
        )),
        other => Err(out_of_range(
            "--algorithm",
            other,
            "the broadcast algorithms are tree, gossip, big, ftco and ack-tree",
            "pass --algorithm tree, gossip, big, ftco or ack-tree",
        )),
    }
}

/// With the root alive, every live rank delivers, whatever fails before or
/// during the operation (FTCO, Definition 3.2).
const FTCO_DELIVERY: Delivery = Delivery {
    always: true,
    despite_dead_ranks: true,
    despite_deaths_during: true,
};

/// FTCO's name in reports: its tree and timeout unit.
fn ftco_name(args: &BcastArgs, timeout: Option<Duration>) -> String {
    format!(
        "ftco over {} T={:?}",
        args.tree,
        timeout.unwrap_or(DEFAULT_FTCO_TIMEOUT)
    )
}

/// A `--correction`, refused with BIG, FTCO and the ack tree, which have
/// none.
fn no_correction(args: &BcastArgs) -> Result<(), CliError> {
    if let Some(correction) = &args.correction {
        return Err(out_of_range(
            "--correction",
            correction,
            "BIG, FTCO and the ack tree have no correction",
            "leave out --correction with --algorithm big, ftco or ack-tree",
        ));
    }
    Ok(())
}

/// `--timeout-ms` as FTCO's timeout unit (`None`: the team's default),
/// refused outside 1 µs to --timeout (a DATA's timeout is a multiple of
/// it: the operation must be able to wait one out).
fn ftco_timeout(args: &BcastArgs, op_timeout_s: f64) -> Result<Option<Duration>, CliError> {
    let Some(ms) = args.timeout_ms else {
        return Ok(None);
    };
    if !(ms >= 1e-3 && ms < op_timeout_s * 1e3) {
        return Err(out_of_range(
            "--timeout-ms",
            ms,
            format!(
                "FTCO's timeout unit must be at least 0.001 ms (1 µs) and below --timeout ({} ms)",
                op_timeout_s * 1e3
            ),
            "pass e.g. --timeout-ms 50 (the default), or raise --timeout",
        ));
    }
    Ok(Some(Duration::from_secs_f64(ms / 1e3)))
}
