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
//! borrow (its operation still completes, among the team's, unseen).
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
use crate::call::immediate::{Finished, Start, Typed};
use crate::call::Control;
use crate::contributors::Contributors;
use crate::error::Error;
use crate::op::Operation;
use crate::types::{Collective, OpId, Rank};
use crate::value::data::Data;

/// How a completed operation's delivery becomes a request's result.
type Finish<R> = Box<dyn FnOnce(Finished) -> Result<R, Error>>;

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
    fn take(self, got: Result<Finished, Error>) -> Result<(R, Option<Contributors>), Error> {
        let got = got?;
        let contributors = got.contributors.clone();
        (self.finish)(got).map(|r| (r, contributors))
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
    let value = (root == me).then(|| Data::encode(&buf, immediate.pool()));
    let finish: Finish<Vec<T>> = Box::new(move |got: Finished| {
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
    let immediate = control.immediate()?;
    let input = Data::encode(&send, immediate.pool());
    let op = Arc::new(Typed {
        op,
        element: std::marker::PhantomData,
    });
    let len = send.len();
    let finish: Finish<Option<Vec<T>>> = Box::new(move |got: Finished| match got.value {
        Some(value) => {
            value.decode_into(&mut send, got.op, Some(len))?;
            Ok(Some(send))
        }
        None => Ok(None),
    });
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
    let finish: Finish<Vec<T>> = Box::new(move |got: Finished| {
        finish(got)?.ok_or(Error::Config(crate::error::ConfigError::Unsupported {
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
    start(control, what, None, Box::new(|_| Ok(())))
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
    let got = match req.done.take() {
        Some(got) => got,
        None => {
            let immediate = control.immediate()?;
            match immediate.complete(req.op, req.root, true) {
                Some(got) => got,
                None => Err(Error::UnknownRequest { op: req.op }),
            }
        }
    };
    req.take(got)
}
