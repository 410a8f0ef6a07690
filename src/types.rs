//! Basic vocabulary shared by every layer.

/// A rank: a member of a team, numbered `0..P`.
pub type Rank = u32;

/// A point in time. In the simulator one tick is one LogP time step; thread
/// engines map their clock onto ticks (nanoseconds).
pub type Tick = u64;

/// The number of an operation within a team. Every message carries it, so a
/// late message of an old operation can be told from an early one of the next.
pub type OpId = u32;

/// Which collective an operation is. Every message carries it, so ranks that
/// call different collectives at the same operation number see an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Collective {
    /// A broadcast from one root to all ranks.
    Broadcast = 0,
    /// A reduce to one root (up-correction, Section 4 of the reduce paper).
    Reduce = 1,
    /// An allreduce: reduce, then corrected broadcast, retried on a new root.
    Allreduce = 2,
    /// A barrier: an allreduce of nothing.
    Barrier = 3,
    /// An allreduce between the MPI processes of one node through their
    /// shared memory (`mpi::shm`): the allreduce's algorithm on lists of
    /// references to the inputs. A kind of its own, so that a process that
    /// takes this path and one that does not (an input of another size)
    /// meet as a mismatch, and no value's bytes are ever read as a list.
    SharedAllreduce = 4,
    /// A reduce between the MPI processes of one node through their shared
    /// memory: the reduce's algorithm on lists of references to the inputs,
    /// folded by the root. A kind of its own, as
    /// [`Collective::SharedAllreduce`].
    SharedReduce = 5,
}

impl Collective {
    /// Every collective, in the order of their numbers.
    pub const ALL: [Collective; 6] = [
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Allreduce,
        Collective::Barrier,
        Collective::SharedAllreduce,
        Collective::SharedReduce,
    ];

    /// The collective numbered `b` (`Collective as u8`), if there is one:
    /// how engines read it off the wire.
    pub fn from_u8(b: u8) -> Option<Collective> {
        Collective::ALL.get(usize::from(b)).copied()
    }

    /// Whether an operation of this kind runs the allreduce of RA Section
    /// 5 (completing one means every live rank entered it, property 1).
    pub fn is_allreduce(self) -> bool {
        matches!(
            self,
            Collective::Allreduce | Collective::Barrier | Collective::SharedAllreduce
        )
    }
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::Allreduce => "allreduce",
            Collective::Barrier => "barrier",
            Collective::SharedAllreduce => "allreduce through shared memory",
            Collective::SharedReduce => "reduce through shared memory",
        })
    }
}

/// The LogP parameters the papers use (Section 2.2 of Corrected Trees): a
/// message costs its sender `overhead` (o), travels `latency` (L), and costs its
/// receiver `overhead` again, so one hop takes o + L + o. The gap g is ignored
/// (small messages: g <= o). Both are positive whole numbers of ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogP {
    /// L: ticks a message is in flight.
    pub latency: Tick,
    /// o: ticks a send (or a receive) occupies its process.
    pub overhead: Tick,
}

impl LogP {
    /// The paper's default model: L = 2, o = 1.
    pub const PAPER: LogP = LogP {
        latency: 2,
        overhead: 1,
    };

    /// The largest L or o a model takes: simulated times are sums of many
    /// hops, and must not overflow a tick.
    pub const MAX: Tick = 1 << 32;

    /// A model with both parameters checked to be at least one tick and at
    /// most [`LogP::MAX`].
    pub fn new(latency: Tick, overhead: Tick) -> Result<LogP, crate::error::ConfigError> {
        let valid = 1..=LogP::MAX;
        if !valid.contains(&latency) || !valid.contains(&overhead) {
            return Err(crate::error::ConfigError::BadLogP { latency, overhead });
        }
        Ok(LogP { latency, overhead })
    }

    /// o + L + o: from the start of a send to the end of its receive.
    pub fn hop(&self) -> Tick {
        2 * self.overhead + self.latency
    }
}

/// LogGP's gap per byte G (Alexandrov et al., 1995) and the size of every
/// message of a simulated operation: a send of `bytes` bytes occupies its
/// process o + (bytes - 1) G ticks and arrives L later; the receive takes o.
/// [`MessageSize::SMALL`] (G = 0) is plain LogP: the papers' model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageSize {
    /// Bytes per message.
    pub bytes: u64,
    /// G: ticks per byte beyond the first.
    pub gap_per_byte: Tick,
}

impl MessageSize {
    /// Plain LogP: no per-byte cost.
    pub const SMALL: MessageSize = MessageSize {
        bytes: 8,
        gap_per_byte: 0,
    };

    /// A size whose per-message cost (bytes - 1) x G is at most
    /// [`LogP::MAX`] ticks.
    pub fn new(bytes: u64, gap_per_byte: Tick) -> Result<MessageSize, crate::error::ConfigError> {
        let m = MessageSize {
            bytes,
            gap_per_byte,
        };
        match bytes.saturating_sub(1).checked_mul(gap_per_byte) {
            Some(extra) if extra <= LogP::MAX => Ok(m),
            _ => Err(crate::error::ConfigError::BadMessageSize {
                bytes,
                gap_per_byte,
            }),
        }
    }

    /// (bytes - 1) x G: what a send costs its process beyond o.
    pub fn extra(&self) -> Tick {
        self.bytes
            .saturating_sub(1)
            .saturating_mul(self.gap_per_byte)
    }
}

impl Default for MessageSize {
    fn default() -> Self {
        MessageSize::SMALL
    }
}

impl Default for LogP {
    fn default() -> Self {
        LogP::PAPER
    }
}

/// The items of `a` and `b`, each in increasing order of `rank`, merged in
/// that order (on equal ranks, `a`'s item first): how a partial result
/// that names its contributors by rank joins another (a large allreduce's
/// lazy sum on threads, its list of region references between processes).
pub fn merge_by_rank<T: Clone>(a: &[T], b: &[T], rank: impl Fn(&T) -> Rank) -> Vec<T> {
    let mut merged = Vec::with_capacity(a.len() + b.len());
    merge_by_rank_into(&mut merged, a, b, rank);
    merged
}

/// [`merge_by_rank`] appended to `merged` (whose capacity a caller may
/// reuse).
pub fn merge_by_rank_into<T: Clone>(
    merged: &mut Vec<T>,
    a: &[T],
    b: &[T],
    rank: impl Fn(&T) -> Rank,
) {
    merged.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && rank(&a[i]) <= rank(&b[j])) {
            merged.push(a[i].clone());
            i += 1;
        } else {
            merged.push(b[j].clone());
            j += 1;
        }
    }
}
