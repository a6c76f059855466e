"""Builds mindyolo's YOLOv8 from yolov8n.yaml the way mindyolo's train.py does (load_config,
Config, create_model). Run with MindSpore (a venv with mindyolo's dependencies) it prints the
figures recorded in ../mindyolo-ground-truth.json; `cellscope graph` reads the same file
statically with `--config yolov8n.yaml` (see ../run.sh, part 2b)."""
import os

from mindyolo.models import create_model
from mindyolo.utils.config import Config, load_config

cfg, _, _ = load_config(os.path.join(os.path.dirname(__file__), "yolov8n.yaml"))
cfg = Config(cfg)
net = create_model(model_name=cfg.network.model_name, model_cfg=cfg.network, num_classes=cfg.network.nc)

if __name__ == "__main__":
    import numpy as np

    import mindspore as ms

    trainable = sum(p.size for p in net.trainable_params())
    total = sum(p.size for p in net.get_parameters())
    out = net(ms.Tensor(np.zeros((1, 3, 640, 640), np.float32)))
    print("PARAMS", trainable, total, tuple(out[0].shape))
