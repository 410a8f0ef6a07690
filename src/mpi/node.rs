//! What the processes of one node know of each other's cores: the cores
//! each may run on (its affinity mask), gathered over the node. Not in the
//! papers; it decides how a process waits (`MpiTransport`'s yield when
//! idle) and how a node team shares out the cores (`hier`).

use mpi::collective::CommunicatorCollectives;
use mpi::topology::{Communicator, SimpleCommunicator};

/// Words of a gathered affinity mask: cores 0 to 1023.
const WORDS: usize = 16;

/// The cores this process may run on, as a mask.
fn mask(cores: &[core_affinity::CoreId]) -> [u64; WORDS] {
    let mut mask = [0u64; WORDS];
    for c in cores.iter().filter(|c| c.id < 64 * WORDS) {
        mask[c.id / 64] |= 1 << (c.id % 64);
    }
    mask
}

/// The cores each process of `node` may run on (its affinity mask, `mine`
/// for this one), in `node`'s rank order. Collective over `node`.
pub(crate) fn core_masks(
    node: &SimpleCommunicator,
    mine: &[core_affinity::CoreId],
) -> Vec<[u64; WORDS]> {
    let mut all = vec![0u64; WORDS * node.size() as usize];
    node.all_gather_into(&mask(mine)[..], &mut all[..]);
    all.chunks(WORDS)
        .map(|c| c.try_into().expect("a whole mask"))
        .collect()
}

/// Whether the processes of this process's node outnumber the cores they
/// may run on between them (the union of their masks): then a process
/// that waits should give its core up at once, as Open MPI's own waits do
/// with `mpi_yield_when_idle` (which Open MPI sets itself when it sees the
/// node oversubscribed). Collective over `world`.
pub(crate) fn oversubscribed(world: &SimpleCommunicator) -> bool {
    let node = world.split_shared(0);
    let masks = core_masks(&node, &crate::runtime::pin::available_cores());
    let cores: u32 = (0..WORDS)
        .map(|w| masks.iter().fold(0u64, |u, m| u | m[w]).count_ones())
        .sum();
    node.size() as u32 > cores.max(1)
}

/// The `i`-th of `k` shares of `cores`, in order (their sizes differ by
/// one at most).
pub(crate) fn share(
    cores: &[core_affinity::CoreId],
    i: usize,
    k: usize,
) -> Vec<core_affinity::CoreId> {
    let n = cores.len();
    cores[i * n / k..(i + 1) * n / k].to_vec()
}

/// The masks of `masks` are all `mine`'s.
pub(crate) fn all_same(masks: &[[u64; WORDS]], mine: &[core_affinity::CoreId]) -> bool {
    let mine = mask(mine);
    masks.iter().all(|m| *m == mine)
}
