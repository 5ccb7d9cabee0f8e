"""The worked examples of the lecture notes (design.md §8), shared by the demo,
the tests, the benchmarks and the notebooks."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp

__all__ = ["seed_f", "seed_f_prime", "robot_arm", "ARM_LENGTHS", "ARM_FRACTIONS"]


def seed_f(x, m=fnp):
    """f(x) = sqrt(x² + exp(x²)) + cos(x² + exp(x²)), with ``m`` the array module."""
    u = x ** 2 + m.exp(x ** 2)
    return m.sqrt(u) + m.cos(u)


def seed_f_prime(x):
    """Closed form: f'(x) = 2x(1+exp(x²))·[1/(2·sqrt(x²+exp(x²))) − sin(x²+exp(x²))]."""
    u = x ** 2 + np.exp(x ** 2)
    return 2 * x * (1 + np.exp(x ** 2)) * (1 / (2 * np.sqrt(u)) - np.sin(u))


ARM_LENGTHS = np.array([1.0, 0.8, 0.5])
ARM_FRACTIONS = np.linspace(0.0, 1.0, 26)[1:]       # 25 points along each link


def robot_arm(theta, m=fnp):
    """3 joint angles -> 150 outputs: (x, y) of 75 points spread along a planar
    arm whose link i turns by the cumulative angle theta_0 + ... + theta_i."""
    angles = m.cumsum(theta)
    base_x, base_y, points = 0.0, 0.0, []
    for i in range(3):
        dx, dy = ARM_LENGTHS[i] * m.cos(angles[i]), ARM_LENGTHS[i] * m.sin(angles[i])
        points.append(m.stack([base_x + ARM_FRACTIONS * dx, base_y + ARM_FRACTIONS * dy], axis=1))
        base_x, base_y = base_x + dx, base_y + dy
    return m.concatenate(points).reshape(-1)
