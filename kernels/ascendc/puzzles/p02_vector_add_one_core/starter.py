def add_kernel(x, y, z, tiling):
    n = tiling.totalLength
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, n)
    yGm.SetGlobalBuffer(y, n)
    zGm.SetGlobalBuffer(z, n)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(inQueueX, 1, n * 2)
    # TODO: a VECIN queue for y and a VECOUT queue for z

    # CopyIn
    xLocal = inQueueX.AllocTensor(half)
    DataCopy(xLocal, xGm, n)
    inQueueX.EnQue(xLocal)
    # TODO: Compute (DeQue x and y, Add into a VECOUT tensor) and CopyOut of z
    xLocal = inQueueX.DeQue(half)
    DataCopy(zGm, xLocal, n)
    inQueueX.FreeTensor(xLocal)
