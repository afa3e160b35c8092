//! Small charts as SVG markup, drawn the same on the server (the first
//! render) and in the browser (as figures refresh).

use std::fmt::Write;

/// A bar per value (oldest first), scaled to the largest, with an
/// accessible name that says what the chart shows and its latest value.
pub fn bars(values: &[i64], title: &str) -> String {
    const W: usize = 240;
    const H: usize = 48;
    let max = values.iter().copied().max().unwrap_or(0).max(1) as f64;
    let n = values.len().max(1);
    let step = W as f64 / n as f64;
    let total: i64 = values.iter().sum();
    let last = values.last().copied().unwrap_or(0);
    let mut svg = format!(
        r#"<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{title}: {total} in the last hour, {last} in the last minute" preserveAspectRatio="none">"#
    );
    for (i, v) in values.iter().enumerate() {
        let h = (*v as f64 / max * (H as f64 - 2.0)).round();
        if h > 0.0 {
            let _ = write!(svg, r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}"/>"#, i as f64 * step, H as f64 - h, (step - 1.0).max(1.0));
        }
    }
    svg.push_str(r#"<line class="axis" x1="0" y1="47.5" x2="240" y2="47.5"/></svg>"#);
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_value_and_name_the_chart() {
        let svg = bars(&[0, 2, 4], "Holds per minute");
        assert!(svg.contains(r#"aria-label="Holds per minute: 6 in the last hour, 4 in the last minute""#));
        assert_eq!(svg.matches("<rect").count(), 2, "no bar for a zero");
        assert!(svg.contains(r#"height="46.0""#), "the largest value fills the height");
        assert!(bars(&[], "Empty").starts_with("<svg"));
    }
}
