"""BERT-Large encoder (24 layers, hidden 1024, 16 heads, intermediate 4096) for MindSpore 2.x.

The BERT-base model of bert_base.py with the BERT-Large configuration (Devlin et al., 2019); used
by docs/hardware-model.md to compare the hardware layer with MindSpore's published BERT-Large
training throughput (sequence length 128).
"""
from bert_base import BertConfig, BertModel

__all__ = ["bert_large"]


def bert_large(is_training: bool = True) -> BertModel:
    """BERT-Large, uncased."""
    config = BertConfig()
    config.hidden_size = 1024
    config.num_hidden_layers = 24
    config.num_attention_heads = 16
    config.intermediate_size = 4096
    return BertModel(config, is_training=is_training)
