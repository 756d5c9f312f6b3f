"""ember.distributions: probability distributions with sampling, reparameterized sampling,
log densities, entropies and KL divergences (torch.distributions' names and arguments)."""

from .continuous import Beta, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl

__all__ = ["Distribution", "Normal", "Uniform", "Gamma", "Beta", "Dirichlet", "MultivariateNormal", "Bernoulli",
           "Categorical", "OneHotCategorical", "kl_divergence", "register_kl"]
