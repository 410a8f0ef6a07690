//! The loom switch (placeholder; the mailbox work fills it in).
