"""numpy's floating-point RuntimeWarnings ("divide by zero encountered", ...) silenced
where ember's own code raised them.

torch gives inf and nan without a word; numpy warns.  Wrapping every op in
``numpy.errstate`` would cost about a microsecond per op, so instead one warnings filter
ignores those messages when they are attributed to an ember module.  The user's own
numpy code keeps numpy's behaviour.
"""

import warnings

warnings.filterwarnings("ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered",
                        category=RuntimeWarning, module=r"ember(\.|$)")
