"""``paddle.utils.plot``: ``Ploter``, the training-curve plot of the fluid book's scripts
(``plot.append(title, step, value)``, ``plot.plot()``). It draws with matplotlib (in a notebook,
into the cell through IPython); ``DISABLE_PLOT=True`` in the environment turns drawing off.

Where fluid 1.8 failed at ``Ploter(...)`` without matplotlib, here the data is kept and ``plot()``
says once that nothing can be drawn (``plot(path)`` raises, naming the missing package)."""

from __future__ import annotations

import os
import sys

__all__ = ["PlotData", "Ploter"]


class PlotData:
    def __init__(self) -> None:
        self.step = []
        self.value = []

    def append(self, step, value) -> None:
        self.step.append(step)
        self.value.append(value)

    def reset(self) -> None:
        self.step = []
        self.value = []


class Ploter:
    """Curves, one per title given, drawn together in one 2-D graph."""

    def __init__(self, *args) -> None:
        self.__args__ = args
        self.__plot_data__ = {title: PlotData() for title in args}
        self.__disable_plot__ = os.environ.get("DISABLE_PLOT")
        self._warned = False

    def __plot_is_disabled__(self) -> bool:
        return self.__disable_plot__ == "True"

    def append(self, title, step, value) -> None:
        if not isinstance(title, str):
            raise TypeError(f"Ploter.append: title must be a str. Received: {title!r}")
        if title not in self.__plot_data__:
            raise ValueError(f"Ploter.append: '{title}' is not one of the titles {list(self.__args__)}")
        self.__plot_data__[title].append(step, value)

    def plot(self, path=None) -> None:
        """Draw the curves: into ``path`` (an image file) when given, else into the notebook."""
        if self.__plot_is_disabled__():
            return
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            if path is not None:
                raise ImportError(f"Ploter.plot('{path}') needs matplotlib: pip install matplotlib") from None
            self._say_once("matplotlib is not installed: Ploter keeps the data but draws nothing")
            return
        titles = []
        for title in self.__args__:
            data = self.__plot_data__[title]
            if data.step:
                titles.append(title)
                plt.plot(data.step, data.value)
        plt.legend(titles, loc="upper left")
        if path is not None:
            plt.savefig(path)
        else:
            try:
                from IPython import display
            except ImportError:
                self._say_once("IPython is not installed: Ploter.plot() draws into a notebook; give it a path")
            else:
                display.clear_output(wait=True)
                display.display(plt.gcf())
        plt.gcf().clear()

    def _say_once(self, message: str) -> None:
        if not self._warned:
            print(f"paddle.utils.plot: {message}", file=sys.stderr)
            self._warned = True

    def reset(self) -> None:
        for data in self.__plot_data__.values():
            data.reset()
