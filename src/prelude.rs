//! What a program using the collectives needs, in one import:
//! `use corrected::prelude::*;`: the team, its typed settings (trees,
//! corrections, algorithms, faults), the collectives, buffers and errors.

pub use crate::buffer::{Buffer, BufferMut, Element, Pod, Zeroable};
pub use crate::call::config::{BroadcastAlgorithm, ReduceAlgorithm};
pub use crate::call::Config;
pub use crate::collectives::Collectives;
pub use crate::contributors::Contributors;
pub use crate::error::{ConfigError, Error};
pub use crate::op::{Operation, SystemOperation};
pub use crate::protocol::allreduce::AllreduceAlgorithm;
pub use crate::protocol::bcast::Correction;
pub use crate::protocol::reduce::FailureScheme;
pub use crate::request::Request;
pub use crate::runtime::{Comm, Fault, FaultSchedule, Team, TeamBuilder, TeamReport};
pub use crate::topology::TreeSpec;
pub use crate::types::Rank;
