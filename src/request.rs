//! Requests of the immediate (non-blocking) collectives
//! ([`Collectives::immediate_all_reduce`](crate::Collectives::immediate_all_reduce)
//! and its siblings), as `MPI_Iallreduce` and rsmpi's `immediate_*` return
//! them: the operation runs while the program computes, and
//! [`Collectives::wait`](crate::Collectives::wait) or
//! [`Collectives::test`](crate::Collectives::test) completes it.
//!
//! A request owns its buffer (a `Vec` moved in at the start and handed
//! back, filled, by the wait): nothing the operation reads or writes can be
//! touched meanwhile, and a request dropped unwaited leaves no dangling
//! borrow (its operation still completes, among the team's, unseen). A
//! large reduction on threads hands the result back in a second buffer
//! (the input is read in place by the others until the operation ends),
//! and keeps the input's for the next call's result: a loop allocates
//! nothing once warm.
//!
//! Progress: the library has no thread of its own. An immediate operation
//! moves whenever its rank is inside the library: in any call on the
//! communicator (another collective, a test, [`progress`]), and to its end
//! in its wait. Between these the rank computes, as after any call whose
//! core lingers: a peer that waits on it takes it for failed once it has
//! been silent for the failure timeout (1 s by default), so a rank that
//! computes for longer tests its requests (or calls [`progress`]) at least
//! that often.
//!
//! [`progress`]: crate::Collectives::progress
//!
//! ```
//! use corrected::prelude::*;
//!
//! let team = Team::builder().ranks(4).build()?;
//! let report = team.run(|comm| -> Result<Vec<f64>, Error> {
//!     let gradient = vec![comm.rank() as f64; 3];
//!     let mut sum = comm.immediate_all_reduce(gradient, SystemOperation::sum())?;
//!     while !comm.test(&mut sum)? {
//!         // The next layer's computation, in slices.
//!     }
//!     comm.wait(sum)
//! });
//! for (_, got) in report.returned() {
//!     assert_eq!(got, &Ok(vec![6.0; 3]));
//! }
//! # Ok::<(), Error>(())
//! ```

use std::fmt;
use std::sync::Arc;

use crate::buffer::Element;
use crate::call::immediate::{Finished, Immediate, Start, Typed, ValueOp};
use crate::call::Control;
use crate::contributors::Contributors;
use crate::error::Error;
use crate::op::Operation;
use crate::types::{Collective, OpId, Rank};
use crate::value::data::Data;
use crate::value::lazy::{chunk_bytes, Reducer};
use crate::value::lent_owned::{OwnedInput, OwnedOutput};

/// How a completed operation's delivery becomes a request's result (the
/// call layer at hand: its pool for a lazy sum's chunks, its spare buffer).
type Finish<R> = Box<dyn FnOnce(Finished, &mut dyn Immediate) -> Result<R, Error>>;

/// An immediate operation started and not yet completed. Complete it with
/// [`Collectives::wait`](crate::Collectives::wait) (or
/// [`wait_all`](crate::Collectives::wait_all)), on the communicator that
/// started it; [`Collectives::test`](crate::Collectives::test) says
/// whether it has completed, without waiting. Its result, `R`, holds the
/// buffer it was given, with the value the blocking call would have
/// written there.
#[must_use = "an immediate operation's result comes only through `wait` (its buffer too)"]
pub struct Request<R> {
    op: OpId,
    root: Option<Rank>,
    /// Set by a test that found the operation complete.
    done: Option<Result<Finished, Error>>,
    finish: Finish<R>,
}

impl<R> fmt::Debug for Request<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("op", &self.op)
            .field("root", &self.root)
            .field("complete", &self.done.is_some())
            .finish()
    }
}

impl<R> Request<R> {
    /// The operation's number (as errors name it).
    pub fn op(&self) -> OpId {
        self.op
    }

    /// True once a [`test`](crate::Collectives::test) found it complete:
    /// its wait returns at once.
    pub fn is_complete(&self) -> bool {
        self.done.is_some()
    }

    /// The result, from what the operation delivered; whose inputs it
    /// holds, where the communicator knows it.
    fn take(
        self,
        got: Result<Finished, Error>,
        immediate: &mut dyn Immediate,
    ) -> Result<(R, Option<Contributors>), Error> {
        let mut got = got?;
        let contributors = got.contributors.take();
        (self.finish)(got, immediate).map(|r| (r, contributors))
    }
}

/// Starts `start` on `control`'s call layer; a request whose result
/// `finish` makes.
fn start<R>(
    control: &mut dyn Control,
    start: Start,
    root: Option<Rank>,
    finish: Finish<R>,
) -> Result<Request<R>, Error> {
    let op = control.immediate()?.start(start)?;
    Ok(Request {
        op,
        root,
        done: None,
        finish,
    })
}

/// An immediate broadcast of `buf` from `root` (the root's `buf` is the
/// value; the others' is where it goes).
pub(crate) fn broadcast<T: Element>(
    control: &mut dyn Control,
    root: Rank,
    mut buf: Vec<T>,
) -> Result<Request<Vec<T>>, Error> {
    let me = control.rank();
    let immediate = control.immediate()?;
    let value = (root == me).then(|| Data::encode(&buf, &immediate.pool()));
    let finish: Finish<Vec<T>> = Box::new(move |got: Finished, _| {
        if root != me {
            if let Some(value) = got.value {
                value.decode_into(&mut buf, got.op, None)?;
            }
        }
        Ok(buf)
    });
    start(
        control,
        Start::Broadcast { root, value },
        Some(root),
        finish,
    )
}

/// An immediate reduce (`root` `Some`: the root's result `Some`) or
/// allreduce (`None`: the result everywhere, `Some`) of `send` with `op`.
pub(crate) fn reduction<T, O>(
    control: &mut dyn Control,
    root: Option<Rank>,
    mut send: Vec<T>,
    op: O,
) -> Result<Request<Option<Vec<T>>>, Error>
where
    T: Element,
    O: Operation<T> + Send + 'static,
{
    op.check()?;
    let (me, size) = (control.rank(), control.size());
    let immediate = control.immediate()?;
    let pool = immediate.pool();
    let bytes = std::mem::size_of_val(&send[..]);
    let len = send.len();
    let typed = Arc::new(Typed {
        op,
        element: std::marker::PhantomData,
    });
    let op: Arc<dyn ValueOp> = typed.clone();
    let finish: Finish<Option<Vec<T>>>;
    let input = if immediate.lazy_from().is_some_and(|from| bytes >= from) {
        // A large reduction on threads, as the blocking call runs it: the
        // input lent where it is, the output lent from the start (an
        // allreduce's: whoever computes a chunk writes it there, also
        // while this rank computes outside the library), the chunks
        // reduced by every rank together once the inputs are agreed
        // (`crate::value::lazy`, `crate::value::lent_owned`).
        let mut input = OwnedInput::new(send, Arc::clone(&pool));
        let chunk = chunk_bytes(std::mem::size_of::<T>());
        let spare = immediate.spare().take();
        let output = root.is_none().then(|| output_buffer(spare, len));
        let output = output.map(|buf| OwnedOutput::new(buf, chunk, &pool));
        let data = Data::lazy(
            me,
            size as usize,
            input.lent(),
            output.as_ref().map(OwnedOutput::lent),
            &pool,
        );
        finish = Box::new(move |got: Finished, immediate| {
            let Some(value) = got.value else {
                return Ok(None);
            };
            let by = Reducer::alone(me);
            let reduced = match &output {
                Some(output) => value.reduce_lent(by, output.lending(), len, got.op, &typed.op),
                None => None,
            };
            let mut buf = match output {
                Some(output) => output.into_vec(),
                None => output_buffer(immediate.spare().take(), len),
            };
            let result = match reduced {
                Some(result) => result,
                // A reduce's root, or a value that is not a lazy sum (a
                // length mismatch): decoded once the loan ended.
                None => value.reduce_into(by, &mut buf, got.op, len, &typed.op, &pool),
            };
            if result.is_ok() && value.is_lazy() {
                // Every chunk is computed: nobody reads the input again.
                input.settle();
            }
            // The input, done with, serves the next call's output.
            *immediate.spare() = Some(Box::new(input.into_vec()));
            result.map(|()| Some(buf))
        });
        data
    } else {
        let data = Data::encode(&send, &pool);
        finish = Box::new(move |got: Finished, immediate| {
            let Some(value) = got.value else {
                return Ok(None);
            };
            let by = Reducer::alone(me);
            value.reduce_into(by, &mut send, got.op, len, &typed.op, &immediate.pool())?;
            Ok(Some(send))
        });
        data
    };
    let what = match root {
        Some(root) => Start::Reduce { root, input, op },
        None => Start::Allreduce {
            kind: Collective::Allreduce,
            input,
            op,
        },
    };
    start(control, what, root, finish)
}

/// An immediate allreduce of `send` with `op`: [`reduction`], whose
/// result every rank has.
pub(crate) fn all_reduce<T, O>(
    control: &mut dyn Control,
    send: Vec<T>,
    op: O,
) -> Result<Request<Vec<T>>, Error>
where
    T: Element,
    O: Operation<T> + Send + 'static,
{
    let Request {
        op: id,
        root,
        done,
        finish,
    } = reduction(control, None, send, op)?;
    let finish: Finish<Vec<T>> = Box::new(move |got: Finished, immediate| {
        finish(got, immediate)?.ok_or(Error::Config(crate::error::ConfigError::Unsupported {
            what: "an allreduce without its result",
            why: "its core delivered none (a bug)",
        }))
    });
    Ok(Request {
        op: id,
        root,
        done,
        finish,
    })
}

/// An immediate barrier.
pub(crate) fn barrier(control: &mut dyn Control) -> Result<Request<()>, Error> {
    let op = Arc::new(Typed::<u8, _> {
        op: crate::op::SystemOperation::max(),
        element: std::marker::PhantomData,
    });
    let what = Start::Allreduce {
        kind: Collective::Barrier,
        input: Data::EMPTY,
        op,
    };
    start(control, what, None, Box::new(|_, _| Ok(())))
}

/// Makes progress, then whether `req` has completed (kept in it for its
/// wait).
pub(crate) fn test<R>(control: &mut dyn Control, req: &mut Request<R>) -> Result<bool, Error> {
    if req.done.is_some() {
        return Ok(true);
    }
    control.progress()?;
    req.done = control.immediate()?.complete(req.op, req.root, false);
    Ok(req.done.is_some())
}

/// Completes `req`: its result and whose inputs it holds.
pub(crate) fn wait<R>(
    control: &mut dyn Control,
    mut req: Request<R>,
) -> Result<(R, Option<Contributors>), Error> {
    let immediate = control.immediate()?;
    let got = match req.done.take() {
        Some(got) => got,
        None => match immediate.complete(req.op, req.root, true) {
            Some(got) => got,
            None => Err(Error::UnknownRequest { op: req.op }),
        },
    };
    req.take(got, immediate)
}

/// A buffer of `len` `T`s for a reduction's result: the spare an earlier
/// immediate call left, if it is one, else a new one.
fn output_buffer<T: Element>(spare: Option<Box<dyn std::any::Any>>, len: usize) -> Vec<T> {
    match spare.map(|b| b.downcast::<Vec<T>>()) {
        Some(Ok(buf)) if buf.len() == len => *buf,
        _ => vec![T::zeroed(); len],
    }
}
