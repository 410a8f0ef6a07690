//! Unit tests of the node's shared-memory regions and reference lists.

use super::*;

/// Two processes' regions, as two handles on the same two files.
fn pair(test: &str, slot_bytes: usize) -> (NodeRegions, NodeRegions, Vec<String>) {
    let paths: Vec<String> = (0..2)
        .map(|r| format!("/dev/shm/corrected-{test}-{}-{r}", std::process::id()))
        .collect();
    for p in &paths {
        create(p, Layout::new(slot_bytes, paths.len()).size()).expect("a region file");
    }
    let a = NodeRegions::map(0, &paths, slot_bytes).expect("mapped");
    let b = NodeRegions::map(1, &paths, slot_bytes).expect("mapped");
    (a, b, paths)
}

#[test]
fn a_published_input_reads_until_its_slot_is_written_again() {
    let (mut a, mut b, paths) = pair("inputs", 4096);
    let one = a.publish(&[1u8; 4096], 0);
    let other = b.publish(&[7u8; 100], 0);
    // SAFETY: checked with `still` after each read.
    unsafe {
        assert_eq!(b.view(one, 4096), Some(&[1u8; 4096][..]));
        assert_eq!(a.view(other, 100), Some(&[7u8; 100][..]));
        // Longer than a slot: refused.
        assert_eq!(a.view(other, 4097), None);
    }
    assert!(b.still(one) && a.still(other));
    // The next call takes the other slot: the first stays readable.
    let two = a.publish(&[2u8; 4096], 0);
    assert!(b.still(one) && b.still(two));
    // The call after writes the first slot again: a reader of call one
    // sees it changed, and a new view of it is refused.
    let three = a.publish(&[3u8; 4096], 0);
    assert_eq!(three.seq % 2, one.seq % 2);
    assert!(!b.still(one));
    // SAFETY: as above.
    unsafe {
        assert_eq!(b.view(one, 4096), None);
        assert_eq!(b.view(three, 4096), Some(&[3u8; 4096][..]));
    }
    // A rank out of range is no region.
    assert!(!a.still(RegionRef { rank: 2, seq: 1 }));
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn a_published_block_is_found_under_its_tag_and_fingerprint_only() {
    let (mut a, mut b, paths) = pair("blocks", 4 * BLOCK_BYTES);
    a.publish(&[1u8; 16], 0);
    b.publish(&[2u8; 16], 0);
    a.begin_result(77);
    a.publish_block(1, BLOCK_BYTES, 5, &[9u8; 100]);
    // SAFETY: checked with `block_still` after each read.
    unsafe {
        let (found, bytes) = b.find_block(5, 77, 1, BLOCK_BYTES, 100).expect("found");
        assert_eq!(bytes, &[9u8; 100][..]);
        assert!(b.block_still(found));
        // Another tag, fingerprint or block, or a process's own: none.
        assert!(b.find_block(6, 77, 1, BLOCK_BYTES, 100).is_none());
        assert!(b.find_block(5, 78, 1, BLOCK_BYTES, 100).is_none());
        assert!(b.find_block(5, 77, 0, 0, 100).is_none());
        assert!(a.find_block(5, 77, 1, BLOCK_BYTES, 100).is_none());
        // Two calls on, the same result slot holds another call's
        // block: the one found is seen changed.
        a.publish(&[3u8; 16], 0);
        a.publish(&[4u8; 16], 0);
        a.begin_result(78);
        a.publish_block(1, BLOCK_BYTES, 7, &[8u8; 100]);
        assert!(!b.block_still(found));
        assert!(b.find_block(5, 77, 1, BLOCK_BYTES, 100).is_none());
    }
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn processes_share_the_fold_and_get_the_same_bits() {
    use crate::op::SystemOperation;
    let (mut a, mut b, paths) = pair("fold", 4 * BLOCK_BYTES);
    // 3.5 blocks of f64, different on each process.
    let n = 7 * BLOCK_BYTES / 16;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.1).collect();
    let y: Vec<f64> = (0..n).map(|i| 1.0 / (i as f64 + 3.0)).collect();
    let ra = a.publish(bytemuck::cast_slice(&x), 0);
    let rb = b.publish(bytemuck::cast_slice(&y), 0);
    let list = RefList {
        len: (8 * n) as u64,
        refs: vec![ra],
    }
    .join(&RefList {
        len: (8 * n) as u64,
        refs: vec![rb],
    });
    let expected: Vec<f64> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    let sum = SystemOperation::sum();
    // A folds every block and publishes it; B copies them all.
    let mut out_a = vec![0.0; n];
    assert!(a.fold(&list, Some((9, (0, 2))), &sum, &mut out_a));
    assert_eq!(out_a, expected);
    let fingerprint = list.fingerprint(8);
    for (j, len) in [
        (0, BLOCK_BYTES),
        (1, BLOCK_BYTES),
        (2, BLOCK_BYTES),
        (3, BLOCK_BYTES / 2),
    ] {
        // SAFETY: only whether it is there is looked at.
        let found = unsafe { b.find_block(9, fingerprint, j, j * BLOCK_BYTES, len) };
        assert!(found.is_some(), "block {j} published by A");
    }
    let mut out_b = vec![0.0; n];
    assert!(b.fold(&list, Some((9, (1, 2))), &sum, &mut out_b));
    assert_eq!(out_b, expected);
    // Under another tag nothing is copied, and B folds the same bits.
    let mut again = vec![0.0; n];
    assert!(b.fold(&list, Some((10, (1, 2))), &sum, &mut again));
    assert_eq!(again, expected);
    // Alone (a reduce's root folds every block itself): the same bits.
    let mut alone = vec![0.0; n];
    assert!(b.fold(&list, None, &sum, &mut alone));
    assert_eq!(alone, expected);
    // Two calls on, A's input slot holds another call: B's fold of the
    // old list is refused.
    a.publish(&[0u8; 64], 0);
    a.publish(&[0u8; 64], 0);
    let mut late = vec![0.0; n];
    assert!(!b.fold(&list, Some((9, (1, 2))), &sum, &mut late));
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn a_region_file_that_is_too_small_is_not_mapped() {
    let paths: Vec<String> = (0..2)
        .map(|r| format!("/dev/shm/corrected-small-{}-{r}", std::process::id()))
        .collect();
    create(&paths[0], Layout::new(4096, 2).size()).unwrap();
    create(&paths[1], Layout::new(4096, 2).size() - 1).unwrap();
    assert!(NodeRegions::map(0, &paths, 4096).is_none());
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn a_list_round_trips_and_joins_in_rank_order() {
    let r = |rank, seq| RegionRef { rank, seq };
    let a = RefList {
        len: 1 << 20,
        refs: vec![r(0, 5), r(3, 7)],
    };
    let b = RefList {
        len: 1 << 20,
        refs: vec![r(1, 2), r(3, 7), r(9, 1)],
    };
    assert_eq!(RefList::decode(&a.encode()), Some(a.clone()));
    let joined = a.join(&b);
    assert_eq!(joined.refs, vec![r(0, 5), r(1, 2), r(3, 7), r(9, 1)]);
    assert_eq!(RefList::decode(&joined.encode()), Some(joined));
    // Not a list: other bytes, a cut list, ranks out of order.
    assert_eq!(RefList::decode(&[0u8; 40]), None);
    let bytes = a.encode();
    assert_eq!(RefList::decode(&bytes[..bytes.len() - 1]), None);
    let unordered = RefList {
        len: 8,
        refs: vec![r(3, 1), r(1, 1)],
    };
    assert_eq!(RefList::decode(&unordered.encode()), None);
}

#[test]
fn a_slot_is_held_by_the_operation_that_last_published_into_it_until_readers_finish_it() {
    let (mut a, b, paths) = pair("finished", 4096);
    // Nothing published yet: no slot is held.
    assert_eq!(a.next_slot_op(), None);
    a.publish(&[1u8; 64], 7);
    // The next publish takes the other slot, never used.
    assert_eq!(a.next_slot_op(), None);
    a.publish(&[2u8; 64], 9);
    // The one after writes the slot of operation 7 again.
    assert_eq!(a.next_slot_op(), Some(7));
    // A reader has finished every call before the operation it names.
    assert_eq!(a.finished(1), 0);
    b.finish(8);
    assert_eq!(a.finished(1), 8);
    assert_eq!(b.finished(1), 8);
    // A rank out of range has finished nothing.
    assert_eq!(a.finished(2), 0);
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}

/// What a process entered is told in its region before the operation's
/// first send, and read by every other process of the node as it stands,
/// whether or not its owner lives on (a heartbeat may be many operations
/// old: a root SIGKILLed inside an operation it had entered, taken for one
/// that never entered it, made a survivor give up on a value the others
/// delivered).
#[test]
fn an_entry_is_read_by_the_other_processes_as_its_owner_told_it() {
    let (mut a, mut b, paths) = pair("entries", 4096);
    let (ea, eb) = (
        a.take_rings().unwrap().entries,
        b.take_rings().unwrap().entries,
    );
    assert_eq!(ea.entered(1), Some(0), "nothing entered yet");
    eb.publish(4);
    assert_eq!(ea.entered(1), Some(5));
    assert_eq!(eb.entered(1), Some(5));
    // Entering an operation also says every call before it ended.
    assert_eq!(a.finished(1), 4);
    ea.publish(0);
    assert_eq!(eb.entered(0), Some(1));
    // The reader outlives the writer's handles.
    drop((b, eb));
    assert_eq!(ea.entered(1), Some(5));
    assert_eq!(ea.entered(2), None, "not a process of the node");
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}
