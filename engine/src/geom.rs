//! 2-D vectors in tile units. Every transcendental function goes through
//! `libm`, never the platform's math library.

use serde::{Deserialize, Serialize};

/// A point or direction in tile units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vec2 {
    /// Horizontal component.
    pub x: f64,
    /// Vertical component (grows downward, like rows).
    pub y: f64,
}

impl Vec2 {
    /// A vector from components.
    pub const fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    /// `self + o`.
    pub fn plus(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x + o.x, self.y + o.y)
    }

    /// `self - o`.
    pub fn minus(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x - o.x, self.y - o.y)
    }

    /// `self * k`.
    pub fn scale(self, k: f64) -> Vec2 {
        Vec2::new(self.x * k, self.y * k)
    }

    /// Dot product.
    pub fn dot(self, o: Vec2) -> f64 {
        self.x * o.x + self.y * o.y
    }

    /// 2-D cross product (z of the 3-D one); positive when `o` is clockwise
    /// of `self` on screen (y down), i.e. to the right.
    pub fn cross(self, o: Vec2) -> f64 {
        self.x * o.y - self.y * o.x
    }

    /// Squared length.
    pub fn length_sq(self) -> f64 {
        self.dot(self)
    }

    /// Length.
    pub fn length(self) -> f64 {
        libm::sqrt(self.length_sq())
    }

    /// Distance to `o`.
    pub fn distance(self, o: Vec2) -> f64 {
        self.minus(o).length()
    }

    /// Rotated by `angle` radians (positive turns right on screen).
    pub fn rotate(self, angle: f64) -> Vec2 {
        let (s, c) = (libm::sin(angle), libm::cos(angle));
        Vec2::new(self.x * c - self.y * s, self.x * s + self.y * c)
    }

    /// Signed angle from `self` to `o` in radians (positive: `o` is to the right).
    pub fn angle_to(self, o: Vec2) -> f64 {
        libm::atan2(self.cross(o), self.dot(o))
    }

    /// Whether both components are finite.
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_and_angles_agree() {
        let d = Vec2::new(1.0, 0.0);
        let r = d.rotate(0.5);
        assert!((d.angle_to(r) - 0.5).abs() < 1e-12);
        assert!(d.cross(Vec2::new(0.0, 1.0)) > 0.0);
        assert_eq!(Vec2::new(3.0, 4.0).length(), 5.0);
    }
}
