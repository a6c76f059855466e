"""ops.interpolate in every mode, each compiled to the operator MindSpore 2.10 runs for it:
nearest (3-D, 4-D: ResizeNearestNeighborV2; 5-D with a scale factor: UpsampleNearest3D),
nearest-exact, linear (ResizeLinear1D), bilinear (ResizeBilinearV2, also from a recomputed scale
factor), trilinear (UpsampleTrilinear3D, also by a scale factor), bicubic (ResizeBicubic) and area
(the adaptive average pools, 1-D to 3-D); with and without align_corners, growing and
shrinking; nn.Upsample, which is ops.interpolate on its constructor's arguments."""
import mindspore.nn as nn
import mindspore.ops as ops


class Interpolate(nn.Cell):
    def __init__(self):
        super().__init__()
        self.up_bilinear = nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True)
        self.up_trilinear = nn.Upsample(scale_factor=1.5, mode="trilinear")

    def construct(self, x1, x2, x3):
        return (
            ops.interpolate(x1, size=(11,), mode="nearest"),
            ops.interpolate(x1, size=(4,), mode="nearest-exact"),
            ops.interpolate(x1, size=(11,), mode="linear"),
            ops.interpolate(x1, size=(4,), mode="linear", align_corners=True),
            ops.interpolate(x1, size=(7,), mode="area"),
            ops.interpolate(x2, size=(8, 11), mode="nearest"),
            ops.interpolate(x2, size=(8, 11), mode="nearest-exact"),
            ops.interpolate(x2, size=(8, 11), mode="bilinear"),
            ops.interpolate(x2, size=(3, 4), mode="bilinear", align_corners=True),
            ops.interpolate(x2, scale_factor=(1.5, 2.0), mode="bilinear",
                            recompute_scale_factor=True),
            ops.interpolate(x2, size=(8, 11), mode="bicubic"),
            ops.interpolate(x2, size=(3, 4), mode="bicubic", align_corners=True),
            ops.interpolate(x2, size=(3, 4), mode="area"),
            ops.interpolate(x3, scale_factor=2.0, mode="nearest"),
            ops.interpolate(x3, size=(5, 7, 6), mode="trilinear"),
            ops.interpolate(x3, size=(2, 3, 9), mode="trilinear", align_corners=True),
            ops.interpolate(x3, scale_factor=2.0, mode="trilinear"),
            ops.interpolate(x3, size=(2, 3, 4), mode="area"),
            self.up_bilinear(x2),
            self.up_trilinear(x3),
        )


net = Interpolate()
