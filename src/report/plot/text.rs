//! PNG text. plotters 0.3.7's ab_glyph renderer puts each glyph's ink at the pen position and
//! drops the glyph's left side bearing, so capitals crowd and gap ("SYN THETIC TESTINPUT").
//! [`Bitmap`] wraps the bitmap backend and draws text itself, the same way plotters does
//! (same layout box, anchors, rotation and vertical placement) but with the bearing; every
//! other call is passed through. SVG writes `<text>` elements and is not affected.

use ab_glyph::{Font, FontRef, ScaleFont, point};
use plotters::backend::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

type Inner<'a> = BitMapBackend<'a>;
type Failure<'a> = DrawingErrorKind<<Inner<'a> as DrawingBackend>::ErrorType>;

pub struct Bitmap<'a> {
    inner: Inner<'a>,
    font: FontRef<'static>,
}

impl<'a> Bitmap<'a> {
    pub fn new(inner: Inner<'a>, font: &'static [u8]) -> Option<Bitmap<'a>> {
        Some(Bitmap {
            inner,
            font: FontRef::try_from_slice(font).ok()?,
        })
    }
}

/// Rasterises `text` at `size` px like plotters (baseline at size/2 below the top), calling
/// `put(x, y, coverage)` for each pixel.
fn rasterise(font: &FontRef<'_>, size: f64, text: &str, mut put: impl FnMut(i32, i32, f32)) {
    let scaled = font.as_scaled(size as f32);
    let mut caret = 0f32;
    let mut previous = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = previous {
            caret += scaled.kern(p, id);
        }
        previous = Some(id);
        let glyph = id.with_scale_and_position(scaled.scale(), point(caret, 0.0));
        if let Some(outline) = scaled.outline_glyph(glyph) {
            let bounds = outline.px_bounds();
            let (x0, y0) = (
                bounds.min.x as i32,
                (size as f32 / 2.0 + bounds.min.y) as i32,
            );
            outline.draw(|x, y, coverage| put(x as i32 + x0, y as i32 + y0, coverage));
        }
        caret += scaled.h_advance(id);
    }
}

impl<'a> DrawingBackend for Bitmap<'a> {
    type ErrorType = <Inner<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), Failure<'a>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), Failure<'a>> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), Failure<'a>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), Failure<'a>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), Failure<'a>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), Failure<'a>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), Failure<'a>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), Failure<'a>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), Failure<'a>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    /// plotters' default `draw_text` (anchor, layout box, rotation), with our rasteriser.
    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), Failure<'a>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let (w, h) = self.get_size();
        let mut pixels = Vec::new();
        rasterise(&self.font, style.size(), text, |x, y, coverage| {
            let (x, y) = transform.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                pixels.push(((x, y), coverage));
            }
        });
        for (point, coverage) in pixels {
            let alpha = color.alpha * f64::from(coverage.clamp(0.0, 1.0));
            self.inner.draw_pixel(
                point,
                BackendColor {
                    alpha,
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }
}
