//! SPSC mailboxes (placeholder; the mailbox work fills it in).
