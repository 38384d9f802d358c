"""Parameters of a Z-Model run: Beatnik's rocket-rig defaults and the derived constants.

Every default lives here (spec ``zmodel.md`` §4.1). Lengths are in the rocket rig's length
unit, times in seconds of the model (g is ``gravity * 9.81``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from grapeshot.model.errors import InputError, check_int, check_number

ORDERS = ("low", "medium", "high")
SOLVERS = ("exact", "cutoff")
BOUNDARIES = ("periodic", "free")
INITS = ("multi", "single")  # Beatnik's "cos" and "sech2"


@dataclass(frozen=True)
class ZModelParams:
    """One run's settings; defaults are Beatnik's rocketrig defaults.

    Parameters
    ----------
    mesh
        ``n``, nodes per dimension as Beatnik counts them (periodic meshes hold ``n - 1``
        unique nodes, the n-th being the wrap of node 0).
    order
        ``"low"`` (Riesz only), ``"medium"`` (Riesz for the normal speed, Birkhoff-Rott for the
        motion), ``"high"`` (Birkhoff-Rott for both).
    solver
        Birkhoff-Rott solver: ``"exact"`` (all pairs) or ``"cutoff"``.
    boundary
        ``"periodic"`` or ``"free"``.
    steps
        Time steps; ``None`` runs to Beatnik's ``t_final = 2 tau``.
    cutoff
        Cutoff radius of the cutoff solver, length units.
    atwood, gravity
        Atwood number A and gravity in g's (g = 9.81 * gravity along -z).
    magnitude
        Initial amplitude m.
    modes
        Beatnik's ``-p``: the wavelength of the multi-mode (cos) interface, or the coefficient
        of r^2 in the single-mode sech^2 bump.
    mu, epsilon
        Artificial viscosity and desingularisation coefficients (scaled by ``dx``).
    init
        ``"multi"`` (Beatnik ``cos``) or ``"single"`` (Beatnik ``sech2``).
    box
        Half-width B of the domain [-B, B]^3.
    fft_config
        heFFTe-style configuration 0..7: bit 0 reorder, bit 1 pencils, bit 2 all-to-all.
    beatnik_compat
        Reproduce Beatnik's quirks Q1 (periodic derivative spacing L/n) and Q2 (Simpson-3/8
        weights counted over n on periodic meshes) so states match Beatnik's bit for bit
        (to round-off); off, the spacing is the node spacing and periodic weights are uniform.
    """

    mesh: int = 128
    order: str = "low"
    solver: str = "exact"
    boundary: str = "periodic"
    steps: int | None = None
    cutoff: float = 0.5
    atwood: float = 0.5
    gravity: float = 25.0
    magnitude: float = 0.05
    modes: float = 1.0
    mu: float = 1.0
    epsilon: float = 0.25
    init: str = "multi"
    box: float = 1.0
    fft_config: int = 6
    beatnik_compat: bool = False
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name, allowed in (
            ("order", ORDERS),
            ("solver", SOLVERS),
            ("boundary", BOUNDARIES),
            ("init", INITS),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise InputError(f"--{name}", f"got {value!r}", f"one of {', '.join(allowed)}")
        check_int(self.mesh, "--mesh", minimum=5)
        if self.steps is not None:
            check_int(self.steps, "--steps", minimum=0)
        for names, positive in (
            (("cutoff", "atwood", "gravity", "box"), True),
            (("magnitude", "modes", "mu", "epsilon"), False),
        ):
            for name in names:
                check_number(
                    getattr(self, name),
                    f"--{name}",
                    low=0.0,
                    low_open=positive,
                    high_open=True,
                    expected="a finite number > 0" if positive else "a finite number >= 0",
                )
        if self.init == "multi" and self.modes == 0:
            raise InputError("--modes", "got 0", "a wavelength > 0 for --init multi")
        if self.fft_config not in range(8):
            raise InputError("--fft-config", f"got {self.fft_config!r}", "an integer 0..7")

    # ------------------------------------------------------------------ derived constants
    @property
    def periodic(self) -> bool:
        """True for periodic boundaries."""
        return self.boundary == "periodic"

    @property
    def nodes(self) -> int:
        """Unique nodes per dimension N (``mesh - 1`` periodic, ``mesh`` free)."""
        return self.mesh - 1 if self.periodic else self.mesh

    @property
    def length(self) -> float:
        """Domain width L = 2B."""
        return 2.0 * self.box

    @property
    def spacing(self) -> float:
        """Node spacing L/(n-1) (both boundaries)."""
        return self.length / (self.mesh - 1)

    @property
    def dx(self) -> float:
        """Spacing used in derivatives, viscosity, epsilon and quadrature (Beatnik Q1)."""
        if self.periodic and self.beatnik_compat:
            return self.length / self.mesh
        return self.spacing

    @property
    def g(self) -> float:
        """Gravitational acceleration, 9.81 * gravity."""
        return 9.81 * self.gravity

    @property
    def mu_eff(self) -> float:
        """Viscosity mu * sqrt(dx dy)."""
        return self.mu * math.sqrt(self.dx * self.dx)

    @property
    def eps_eff(self) -> float:
        """Desingularisation epsilon * sqrt(dx dy), added to r^2 in the BR kernel."""
        return self.epsilon * math.sqrt(self.dx * self.dx)

    @property
    def tau(self) -> float:
        """Time scale 1/sqrt(A g)."""
        return 1.0 / math.sqrt(self.atwood * self.g)

    @property
    def dt(self) -> float:
        """Fixed time step: tau/25 (low, medium) or tau/50 (high)."""
        return self.tau / (50.0 if self.order == "high" else 25.0)

    @property
    def n_steps(self) -> int:
        """Steps to run: ``steps`` or the steps Beatnik takes to reach 2 tau."""
        if self.steps is not None:
            return int(self.steps)
        return 100 if self.order == "high" else 50

    @property
    def uses_riesz(self) -> bool:
        """Low and medium orders take the normal speed from the Riesz transform."""
        return self.order in ("low", "medium")

    @property
    def uses_br(self) -> bool:
        """Medium and high orders move the mesh with the Birkhoff-Rott velocity."""
        return self.order in ("medium", "high")
