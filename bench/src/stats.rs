//! Small helpers shared by the benchmarks.

pub use routecache::gen::Rng;

/// `x` rounded to `digits` decimals, as the JSON rows carry figures: a
/// `NaN` (no sample) becomes `null`.
pub fn round(x: f64, digits: i32) -> serde_json::Value {
    let p = 10f64.powi(digits);
    serde_json::Number::from_f64((x * p).round() / p).map_or(serde_json::Value::Null, Into::into)
}

/// Prints one JSON Lines row.
pub fn row(v: serde_json::Value) {
    println!("{v}");
}

/// The median of the samples (sorts them).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Times one update of a loaded set: adding an element past all others in
/// its first field, publishing it, and deleting it again. Returns the
/// microseconds of (add, commit, delete).
pub fn time_single_update(set: &mut matcher::Set, last: &matcher::Element) -> (f64, f64, f64) {
    use std::time::Instant;
    let mut extra = last.clone();
    extra.key[0] = matcher::Range::single(set.decl().fields()[0].max());
    let t = Instant::now();
    set.insert(extra.clone(), matcher::InsertMode::Create)
        .unwrap();
    let add = t.elapsed().as_secs_f64() * 1e6;
    let t = Instant::now();
    set.commit();
    let commit = t.elapsed().as_secs_f64() * 1e6;
    let t = Instant::now();
    set.delete(&extra.key).unwrap();
    let delete = t.elapsed().as_secs_f64() * 1e6;
    set.commit();
    (add, commit, delete)
}
