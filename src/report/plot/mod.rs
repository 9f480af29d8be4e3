//! Plots (plotters, with the embedded DejaVu Sans so text renders on slim images): bus
//! bandwidth and latency against size, and a node-pair heatmap. Each is drawn once per backend
//! by the same function; the legend sits in its own panel so it never covers data.

mod bandwidth;
pub mod heatmap;
mod latency;
mod style;
mod text;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Document, Exporter};
use crate::error::{Error, Result};

/// Canvas size in pixels (PNG) or user units (SVG).
pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 720;

static FONT: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlotKind {
    Bandwidth,
    Latency,
    /// Pair heatmap of one run and op.
    Heatmap {
        run: usize,
        op: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    Png,
    Svg,
}

/// One plot in one image format.
pub struct Plot {
    pub kind: PlotKind,
    pub image: Image,
}

impl PlotKind {
    pub fn stem(&self) -> String {
        match self {
            PlotKind::Bandwidth => "bandwidth".into(),
            PlotKind::Latency => "latency".into(),
            PlotKind::Heatmap { run, op } => format!("heatmap-{op}-{}", run + 1),
        }
    }

    pub fn title(&self, doc: &Document) -> String {
        match self {
            PlotKind::Bandwidth => "Bus bandwidth against message size".into(),
            PlotKind::Latency => "Time per operation against message size".into(),
            PlotKind::Heatmap { run, op } => {
                format!("{op} by node pair: {}", doc.runs[*run].label)
            }
        }
    }
}

/// The plots a document has data for.
pub fn kinds(doc: &Document) -> Vec<PlotKind> {
    let has_rows = doc
        .runs
        .iter()
        .any(|r| crate::results::rows::all_rows(&r.record).next().is_some());
    // One rank moves nothing between GPUs: its bus bandwidth is 0 by definition, and a plot
    // of zeros says nothing (the time plot still does).
    let has_bandwidth = doc.runs.iter().any(|r| {
        crate::results::rows::all_rows(&r.record).any(|row| row.busbw_gbs.is_some_and(|b| b > 0.0))
    });
    let mut kinds = Vec::new();
    if has_bandwidth {
        kinds.push(PlotKind::Bandwidth);
    }
    if has_rows {
        kinds.push(PlotKind::Latency);
    }
    for (run, r) in doc.runs.iter().enumerate() {
        for op in heatmap::ops(&r.record) {
            kinds.push(PlotKind::Heatmap { run, op });
        }
    }
    kinds
}

impl Exporter for Plot {
    fn file_name(&self) -> String {
        let ext = match self.image {
            Image::Png => "png",
            Image::Svg => "svg",
        };
        format!("{}.{ext}", self.kind.stem())
    }

    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        match self.image {
            Image::Png => png(doc, &self.kind),
            Image::Svg => svg(doc, &self.kind),
        }
    }
}

/// The PNG of a plot; rendered once per document and reused (the HTML embeds the same bytes).
pub fn png(doc: &Document, kind: &PlotKind) -> Result<Vec<u8>> {
    if let Some((_, bytes)) = doc.png_cache.borrow().iter().find(|(k, _)| k == kind) {
        return Ok(bytes.clone());
    }
    register_font()?;
    let mut pixels = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let bitmap = BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT));
        let backend = text::Bitmap::new(bitmap, FONT).ok_or_else(font_error)?;
        let root = backend.into_drawing_area();
        draw(&root, doc, kind).map_err(|e| draw_error(kind, e))?;
        root.present().map_err(|e| draw_error(kind, Box::new(e)))?;
    }
    let bytes = encode_png(&pixels).map_err(|e| draw_error(kind, Box::new(e)))?;
    doc.png_cache
        .borrow_mut()
        .push((kind.clone(), bytes.clone()));
    Ok(bytes)
}

pub fn svg(doc: &Document, kind: &PlotKind) -> Result<Vec<u8>> {
    register_font()?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, doc, kind).map_err(|e| draw_error(kind, e))?;
        root.present().map_err(|e| draw_error(kind, Box::new(e)))?;
    }
    Ok(text.into_bytes())
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    doc: &Document,
    kind: &PlotKind,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    match kind {
        PlotKind::Bandwidth => bandwidth::draw(root, doc),
        PlotKind::Latency => latency::draw(root, doc),
        PlotKind::Heatmap { run, op } => heatmap::draw(root, doc, *run, op),
    }
}

fn encode_png(rgb: &[u8]) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Default);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    encoder.write_header()?.write_image_data(rgb)?;
    Ok(out)
}

/// plotters draws text only with a registered font; ours is compiled in.
fn register_font() -> Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok { Ok(()) } else { Err(font_error()) }
}

fn font_error() -> Error {
    Error::infra("the embedded font (assets/DejaVuSans.ttf) could not be loaded")
}

fn draw_error(kind: &PlotKind, e: Box<dyn std::error::Error>) -> Error {
    Error::infra(format!("cannot draw the {} plot: {e}", kind.stem()))
}
