//! What a program using the collectives needs, in one import:
//! `use corrected::prelude::*;`.

pub use crate::buffer::{Buffer, BufferMut, Element, Pod, Zeroable};
pub use crate::call::Config;
pub use crate::collectives::Collectives;
pub use crate::error::{ConfigError, Error};
pub use crate::op::{Operation, SystemOperation};
pub use crate::runtime::{Comm, FaultSchedule, Team, TeamBuilder, TeamReport};
pub use crate::types::Rank;
