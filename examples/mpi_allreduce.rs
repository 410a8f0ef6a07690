//! An allreduce between MPI processes, written against the engine-neutral
//! `Collectives` trait: the same `average` runs on threads (`Comm`) or on
//! processes (`MpiComm`). A small gradient (1000 values) travels in
//! messages; a large one (200 000 values, 1.6 MB) goes through the node's
//! shared memory when every process runs on this node (docs/mpi.md).
//!
//! ```sh
//! cargo build --release --features mpi --example mpi_allreduce
//! mpirun --allow-run-as-root --oversubscribe --bind-to none \
//!        --mca pml ob1 --mca btl self,vader -n 4 \
//!        target/release/examples/mpi_allreduce
//! ```

use corrected::mpi::MpiComm;
use corrected::prelude::*;

/// The element-wise average of every rank's `local`, on every rank.
fn average(comm: &mut impl Collectives, local: &[f64]) -> Result<Vec<f64>, Error> {
    let mut sum = vec![0.0; local.len()];
    comm.all_reduce_into(local, &mut sum, SystemOperation::sum())?;
    let n = comm.size() as f64;
    Ok(sum.into_iter().map(|x| x / n).collect())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let universe = mpi::initialize().ok_or("MPI is initialized once")?;
    let mut comm = MpiComm::new(&universe.world(), &Team::builder())?;
    let (me, size) = (comm.rank(), comm.size());
    for n in [1000, 200_000] {
        // A "gradient" of n values, different on every rank.
        let local: Vec<f64> = (0..n).map(|i| f64::from(me) * 1000.0 + i as f64).collect();
        let avg = average(&mut comm, &local)?;
        // Check against the closed form: the mean over ranks of r * 1000 + i.
        let expected = |i: usize| (f64::from(size) - 1.0) / 2.0 * 1000.0 + i as f64;
        assert!(avg.iter().enumerate().all(|(i, &x)| x == expected(i)));
        println!(
            "rank {me} of {size}: average[0] = {}, average[{}] = {} (checked; {n} values{})",
            avg[0],
            n - 1,
            avg[n - 1],
            if n * 8 >= corrected::mpi::SHARED_MIN_BYTES && comm.shares_memory() {
                ", through shared memory"
            } else {
                ""
            }
        );
    }
    Ok(())
}
