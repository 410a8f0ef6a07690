//! Large allgathers and reduce-scatters on threads: the fault-tolerant
//! allreduce agrees on the contributions, each rank's input lent in place
//! as a large allreduce's is (a lazy sum, [`crate::value::lazy`]), and
//! then each rank moves only what is its own: an allgather copies every
//! contributor's block once, a reduce-scatter reduces its own block of
//! every contributor's input. The guarantee is the allreduce's (the
//! contributions are one agreed set, the same on every rank), and each
//! rank moves what `MPI_Allgather` and `MPI_Reduce_scatter_block` move,
//! where the allreduce of the whole vector (`crate::gather`, what smaller
//! values and the other engines run) moves the vector of all blocks at
//! every step (docs/algorithms.md, *Allgather, reduce-scatter and split
//! through the allreduce*).

use crate::buffer::Element;
use crate::call::Control;
use crate::contributors::Contributors;
use crate::error::{ConfigError, Error};
use crate::op::Operation;
use crate::runtime::comm::Comm;
use crate::types::Collective;
use crate::value::data::Data;
use crate::value::data_op;
use crate::value::lazy::LAZY_MIN_BYTES;
use crate::value::lent::Lending;

impl Comm<'_> {
    /// Whether an allgather or reduce-scatter whose whole vector has
    /// `bytes` goes this way: from [`LAZY_MIN_BYTES`], where the team
    /// reduces by up-correction and knows contributors.
    pub(super) fn gathers_in_place(&self, bytes: usize) -> bool {
        bytes >= LAZY_MIN_BYTES && !self.ftco_reduces() && self.caller.knows_contributors().is_ok()
    }

    /// An allgather of `send`'s block into `recv` (`size` blocks): the
    /// contributions agreed by the allreduce, then every contributor's
    /// block copied from where its rank lent it.
    pub(super) fn gather_in_place<T: Element>(
        &mut self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<Contributors, Error> {
        let shared = self.caller.engine.shared;
        let pool = &*shared.segments;
        let (me, size) = (self.caller.rank(), self.caller.size() as usize);
        let bytes: &[u8] = bytemuck::cast_slice(send);
        let mut lending = Lending::new(bytes, pool);
        let input = Data::lazy(me, size, lending.lent(), None, pool);
        // The contributions' lists join; no element is combined.
        let combine = data_op::<T>(&crate::gather::Disjoint, pool);
        let got = self
            .caller
            .allreduce(Collective::Allreduce, input, &combine)?;
        let who = self.caller.contributors(&got);
        let result = got.value.gather_into(me, recv, got.op, send.len());
        // Each other rank copies this block once: the loan ends as a
        // broadcast root's does, once they have, or with a copy for the
        // late ones.
        self.end_loan(&mut lending, bytes.len());
        drop(lending);
        self.caller.record_latency(got.started);
        result?;
        who.ok_or_else(lost)
    }

    /// A reduce-scatter of `send` (`size` blocks of `recv`'s length) into
    /// `recv`: the contributions agreed by the allreduce, then this rank's
    /// block of every contributor's input reduced where its rank lent it.
    pub(super) fn reduce_scatter_in_place<T: Element, O: Operation<T>>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<Contributors, Error> {
        let shared = self.caller.engine.shared;
        let pool = &*shared.segments;
        let (me, size) = (self.caller.rank(), self.caller.size() as usize);
        let n = send.len() / size;
        let bytes: &[u8] = bytemuck::cast_slice(send);
        let mut lending = Lending::new(bytes, pool);
        let input = Data::lazy(me, size, lending.lent(), None, pool);
        let combine = data_op(&op, pool);
        let got = self
            .caller
            .allreduce(Collective::Allreduce, input, &combine)?;
        let who = self.caller.contributors(&got);
        let range = me as usize * n..(me as usize + 1) * n;
        let result = if recv.len() == n {
            got.value
                .reduce_range_into(me, range, recv, got.op, send.len(), &op)
        } else {
            // Took part in full; fails alone, `recv` untouched, and done
            // with the others' inputs.
            got.value.refuse_inputs(me);
            Err(Error::LengthMismatch {
                op: got.op,
                mine: recv.len(),
                theirs: n,
            })
        };
        self.end_loan(&mut lending, bytes.len());
        drop(lending);
        self.caller.record_latency(got.started);
        result?;
        who.ok_or_else(lost)
    }
}

/// The allreduce did not report its contributors (never with a failure
/// scheme that counts, which `gathers_in_place` asks for): an error, not
/// a panic.
fn lost() -> Error {
    Error::Config(ConfigError::Unsupported {
        what: "knowing this allgather's contributors",
        why: "the allreduce did not report them",
    })
}
