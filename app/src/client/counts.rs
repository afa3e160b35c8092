//! What the live feed's counts change on the page: each section's shape on
//! the venue overview (its shade and its accessible name), and a standing
//! area's places left.

use frontrow_model::live::SectionCount;
use web_sys::Element;

use super::browser::{document, element};
use crate::format::{grouped, section_label, shade};

fn number(el: &Element, attribute: &str) -> i64 {
    el.get_attribute(attribute).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Shows one section's count on its overview shape.
fn show_on_overview(shape: &Element, count: &SectionCount) {
    let standing = shape.class_list().contains("standing");
    let price = number(shape, "data-price");
    let _ = shape.set_attribute("data-available", &count.available.to_string());
    let _ = shape.set_attribute("aria-label", &section_label(&count.section, standing, count.available, count.total, price));
    let class = format!("ov-section shade-{}{}", shade(count.available, count.total), if standing { " standing" } else { "" });
    let _ = shape.set_attribute("class", &class);
}

/// Applies counts to whatever this page shows of them; answers how many
/// places the page's view has free now, if it shows counts at all.
pub fn apply(counts: &[SectionCount]) -> Option<i64> {
    let mut shown = false;
    for count in counts {
        if let Some(shape) = element(&format!("ov-{}", count.section)) {
            show_on_overview(&shape, count);
            shown = true;
        }
        let area = element("standing-area").filter(|a| a.get_attribute("data-section").as_deref() == Some(count.section.as_ref()));
        if area.is_some() {
            if let Some(el) = element("places-available") {
                el.set_text_content(Some(&grouped(count.available)));
            }
            return Some(count.available);
        }
    }
    // The overview's free places: every section's, as last heard.
    shown.then(|| {
        let shapes = document().query_selector_all(".ov-section").ok();
        shapes.map_or(0, |list| {
            (0..list.length())
                .filter_map(|i| list.item(i))
                .filter_map(|n| wasm_bindgen::JsCast::dyn_into::<Element>(n).ok())
                .map(|el| number(&el, "data-available"))
                .sum()
        })
    })
}
