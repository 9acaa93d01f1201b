def add_kernel(x, y, z, tiling):
    blockLength = tiling.blockLength
    tileNum = tiling.tileNum
    tileLength = blockLength // tileNum
    offset = blockLength * GetBlockIdx()
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x + offset, blockLength)
    yGm.SetGlobalBuffer(y + offset, blockLength)
    zGm.SetGlobalBuffer(z + offset, blockLength)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, 1)
    inQueueY = TQue(TPosition.VECIN, 1)
    outQueueZ = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(inQueueX, 1, tileLength * 2)
    pipe.InitBuffer(inQueueY, 1, tileLength * 2)
    pipe.InitBuffer(outQueueZ, 1, tileLength * 2)
    # TODO: loop over the tileNum tiles (this does the first one only)
    for i in range(1):
        # CopyIn
        xLocal = inQueueX.AllocTensor(half)
        yLocal = inQueueY.AllocTensor(half)
        DataCopy(xLocal, xGm[i * tileLength], tileLength)
        DataCopy(yLocal, yGm[i * tileLength], tileLength)
        inQueueX.EnQue(xLocal)
        inQueueY.EnQue(yLocal)
        # Compute
        xLocal = inQueueX.DeQue(half)
        yLocal = inQueueY.DeQue(half)
        zLocal = outQueueZ.AllocTensor(half)
        Add(zLocal, xLocal, yLocal, tileLength)
        outQueueZ.EnQue(zLocal)
        inQueueX.FreeTensor(xLocal)
        inQueueY.FreeTensor(yLocal)
        # CopyOut
        zLocal = outQueueZ.DeQue(half)
        DataCopy(zGm[i * tileLength], zLocal, tileLength)
        outQueueZ.FreeTensor(zLocal)
