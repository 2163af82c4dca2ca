//! The fault hook header (`x-specstorm-fault`, what the bench asks of the
//! spawned reference server per op) carries the schedule fuzzer's points
//! beside the faults' pauses and crashes, and a header written before the
//! fuzzer existed reads as it did.

use specstorm::fault_hook::{fault_header, parse_fault_header, HandleHook};
use specstorm::fuzz::Delay;
use specstorm::workload::groups::statements::load_groups;
use std::time::Duration;

#[test]
fn the_header_carries_the_points_and_old_headers_read_as_before() {
    let v = load_groups("groups-naive", None).unwrap();
    let program = &v.ingest;
    let mut faults = parse_fault_header("pause=s2:5000;crash-after=s1", program);
    let before = faults.clone();
    assert_eq!(before.pauses.len(), 1);
    assert!(before.fuzz.is_empty());
    faults.fuzz = vec![
        (1, Delay::Yield),
        (2, Delay::Sleep(Duration::from_micros(7))),
    ];
    let header = fault_header(&faults, program).unwrap();
    assert!(header.ends_with("fuzz=1:0;fuzz=2:7000"), "{header}");
    assert_eq!(parse_fault_header(&header, program), faults);
    // A point before the first step, or longer than a sleep may be,
    // is malformed and ignored, as an unknown part.
    let odd = format!("{header};fuzz=0:5;fuzz=1:999999999999;fuzz=x");
    assert_eq!(parse_fault_header(&odd, program), faults);
    let hook = HandleHook {
        pauses: vec![("s2".into(), Duration::from_nanos(5))],
        fuzz: faults.fuzz.clone(),
        ..HandleHook::default()
    };
    let h = hook.header().unwrap();
    assert_eq!(HandleHook::parse(&h, program), hook);
    assert!(HandleHook::parse("pause=s2:5", program).fuzz.is_empty());
}
