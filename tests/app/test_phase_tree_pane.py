"""The phase tree pane in an app, through the pilot.
"""

from __future__ import annotations

from support.events import tree_of
from textual.app import App

from trt_tui.core.build.events import PhaseStart


async def test_a_tree_that_outgrows_its_pane_shows_a_scrollbar_at_once():
    """Phases added to a tree shown in a short pane (and nothing else on screen changing size) bring
    the tree's scrollbar with them: without it a user cannot tell rows are hidden below. Textual
    updates a scroll view's scrollbars only when a layout finds its virtual size changed, and the tree
    asks for no layout when rows come: its own update has to."""
    from trt_tui.ui.widgets.phase_tree import PhaseTreeView

    class OneTree(App):
        CSS = "PhaseTreeView { height: 6; }"

        def compose(self):
            yield PhaseTreeView()

    first = [PhaseStart(1, 0.0, 1, "Building engine", None, 30)]
    more = [PhaseStart(1, 0.1 * i, i, f"Step {i}", 1, 1) for i in range(2, 22)]
    tree = tree_of(*first)
    app = OneTree()
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(PhaseTreeView)
        view.show(1, "mnist.onnx", tree, now=0.0)
        await pilot.pause()
        assert not view.show_vertical_scrollbar  # two lines fit
        tree.extend(more)
        view.add_phases([e.phase for e in more], now=2.0)
        await pilot.pause()
        await pilot.pause()
        assert view.show_vertical_scrollbar
        assert view.vertical_scrollbar.region.height == view.size.height  # placed, not only flagged
        assert view.max_scroll_y == len(more) + 2 - view.size.height
