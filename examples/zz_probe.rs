use corrected::runtime::{SystemOperation, Team};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (p, n, iters, op): (u32, usize, u32, &str) = (
        a[1].parse().unwrap(),
        a[2].parse().unwrap(),
        a[3].parse().unwrap(),
        &a[4],
    );
    let team = Team::builder().ranks(p).fault_budget(1).build().unwrap();
    team.run(|comm| {
        let input = vec![1.0f64; n];
        let mut out = vec![0.0f64; n];
        for _ in 0..iters {
            if op == "bcast" {
                comm.broadcast_into(0, &mut out[..]).unwrap();
            } else {
                comm.all_reduce_into(&input[..], &mut out[..], SystemOperation::sum())
                    .unwrap();
            }
        }
    });
}
