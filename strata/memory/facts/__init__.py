"""Facts read out of episodes: the extraction pass, its batches and the model-free reader.
"""
