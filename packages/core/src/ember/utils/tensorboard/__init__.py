"""``ember.utils.tensorboard``: torch.utils.tensorboard's SummaryWriter, writing TensorBoard
event files through the ``tensorboard`` package's event writer (the ``tensorboard`` extra:
``pip install 'ember-core[tensorboard]'``).

    from ember.utils.tensorboard import SummaryWriter
    writer = SummaryWriter()                    # ./runs/<date>_<host>/
    writer.add_scalar("loss", loss.item(), step)

``tensorboard --logdir runs`` shows them: scalars, histograms, images, text, hyperparameter
sessions, embeddings, precision-recall curves, meshes and custom scalar layouts.
``add_graph`` writes the graph ``ember.jit.trace`` captures (an ``ember.fx`` graph).
"""

from ._writer import SummaryWriter

__all__ = ["SummaryWriter"]
