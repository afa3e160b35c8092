//! The map's view: zoom (buttons, ctrl + wheel, pinch), drag to pan once
//! zoomed, and a section filter that zooms to the section. It changes the
//! SVG's viewBox only; the seats stay as the server drew them.

use std::cell::Cell;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, PointerEvent, WheelEvent};

use super::browser::{document, window};
use super::seat_dom::seat_map;

/// The map tools' state: the whole venue's viewBox, read once.
#[derive(Clone, Copy)]
pub struct MapView {
    full: StoredValue<Option<[f64; 4]>>,
}

impl Default for MapView {
    fn default() -> Self {
        Self { full: StoredValue::new(None) }
    }
}

fn view_box(map: &Element) -> Option<[f64; 4]> {
    let parts: Vec<f64> = map.get_attribute("viewBox")?.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    parts.try_into().ok()
}

impl MapView {
    fn set_view_box(self, map: &Element, vb: [f64; 4]) {
        let _ = map.set_attribute("viewBox", &format!("{:.1} {:.1} {:.1} {:.1}", vb[0], vb[1], vb[2], vb[3]));
        let zoomed = self.full.get_value().is_some_and(|f| vb[2] < f[2] * 0.99);
        let _ = map.class_list().toggle_with_force("zoomed", zoomed);
    }

    pub fn zoom(self, factor: f64) {
        let Some(map) = seat_map() else { return };
        let (Some(vb), Some(full)) = (view_box(&map), self.full.get_value()) else { return };
        let w = (vb[2] * factor).clamp(full[2] / 12.0, full[2]);
        let h = w * vb[3] / vb[2];
        let (cx, cy) = (vb[0] + vb[2] / 2.0, vb[1] + vb[3] / 2.0);
        self.set_view_box(&map, [cx - w / 2.0, cy - h / 2.0, w, h]);
    }

    /// Zooms to a section ("" for the whole venue).
    pub fn show_section(self, name: &str) {
        let Some(map) = seat_map() else { return };
        let target = if name.is_empty() {
            self.full.get_value()
        } else {
            map.query_selector(&format!("g.section[data-section=\"{}\"]", name.replace('"', "")))
                .ok()
                .flatten()
                .and_then(|g| g.get_attribute("data-box"))
                .and_then(|b| b.split_whitespace().filter_map(|v| v.parse().ok()).collect::<Vec<f64>>().try_into().ok())
        };
        if let Some(vb) = target {
            self.set_view_box(&map, vb);
        }
        if let Ok(Some(select)) = document().query_selector("#section-filter") {
            if let Some(select) = select.dyn_ref::<web_sys::HtmlSelectElement>() {
                select.set_value(name);
            }
        }
    }

    /// Wires the wheel and pointer handlers to the map.
    pub fn start(self) {
        let Some(map) = seat_map() else { return };
        self.full.set_value(view_box(&map));
        // Ctrl + wheel (and trackpad pinch, which browsers report as such) zooms.
        let on_wheel = Closure::<dyn FnMut(WheelEvent)>::new(move |ev: WheelEvent| {
            if ev.ctrl_key() || ev.meta_key() {
                ev.prevent_default();
                self.zoom(if ev.delta_y() < 0.0 { 0.85 } else { 1.0 / 0.85 });
            }
        });
        // Dragging pans once zoomed in; a drag is not a click on a seat
        // (the picker reads `data-panned`).
        let drag: Rc<Cell<Option<(f64, f64, [f64; 4], f64)>>> = Rc::default();
        let on_down = Closure::<dyn FnMut(PointerEvent)>::new({
            let drag = drag.clone();
            move |ev: PointerEvent| {
                let Some(map) = seat_map() else { return };
                let _ = map.remove_attribute("data-panned");
                if let Some(vb) = view_box(&map) {
                    let scale = vb[2] / map.get_bounding_client_rect().width().max(1.0);
                    drag.set(Some((f64::from(ev.client_x()), f64::from(ev.client_y()), vb, scale)));
                }
            }
        });
        let on_move = Closure::<dyn FnMut(PointerEvent)>::new({
            let drag = drag.clone();
            move |ev: PointerEvent| {
                let (Some((x0, y0, vb, scale)), Some(map)) = (drag.get(), seat_map()) else { return };
                let (dx, dy) = (f64::from(ev.client_x()) - x0, f64::from(ev.client_y()) - y0);
                if dx.abs() + dy.abs() > 4.0 && map.class_list().contains("zoomed") {
                    let _ = map.set_attribute("data-panned", "1");
                    self.set_view_box(&map, [vb[0] - dx * scale, vb[1] - dy * scale, vb[2], vb[3]]);
                }
            }
        });
        let on_up = Closure::<dyn FnMut(PointerEvent)>::new(move |_| drag.set(None));
        let _ = map.add_event_listener_with_callback("wheel", on_wheel.as_ref().unchecked_ref());
        let _ = map.add_event_listener_with_callback("pointerdown", on_down.as_ref().unchecked_ref());
        let _ = map.add_event_listener_with_callback("pointermove", on_move.as_ref().unchecked_ref());
        let _ = window().add_event_listener_with_callback("pointerup", on_up.as_ref().unchecked_ref());
        on_wheel.forget();
        on_down.forget();
        on_move.forget();
        on_up.forget();
    }
}
