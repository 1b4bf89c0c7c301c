"""`trt-tui --demo` writes its sample models as the app runs: the app takes keys meanwhile and says
it is preparing them, and the model quickest to build (MNIST) is highlighted first, not the slowest."""

from __future__ import annotations

from support.app import SIZE, make
from support.waiting import pilot_wait


async def test_the_demo_takes_keys_while_writing_and_highlights_the_quickest_model(tmp_path):
    directory = tmp_path / "demo"
    directory.mkdir()  # as `make_demo_dir` gives it: empty
    app = make(directory, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: app.picker.models, 30)
        assert len(app.picker.models) < 3 and "preparing" in app.sub_title, "no sign of the models to come"
        assert app.picker.highlighted_path() == str(directory / "mnist.onnx")
        await pilot.press("slash", *"net", "enter")  # typed while the slow models are written
        await pilot_wait(pilot, lambda: len(app.picker.models) == 3 and not app.sub_title, 60)
        assert app.picker.filter_text == "net", "keys pressed while the samples were written were lost"
        assert app.picker.visible_paths() == [str(directory / "densenet.onnx"), str(directory / "resnet50.onnx")]
        await pilot.press("q")
    shown = make(directory / "again", demo=True)
    (directory / "again").mkdir()
    async with shown.run_test(size=SIZE) as pilot:  # left alone: the highlight stays on MNIST as the others come
        await pilot_wait(pilot, lambda: len(shown.picker.models) == 3 and not shown.sub_title, 60)
        assert shown.picker.highlighted_path() == str(directory / "again" / "mnist.onnx")
        assert shown.picker.visible_paths()[0] == str(directory / "again" / "densenet.onnx")  # the list's order stays
        await pilot.press("q")
